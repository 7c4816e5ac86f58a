"""The contract documents generated from the code: AsyncAPI (topics), OpenAPI (HTTP), JSON Schemas."""

from assetbus.contract.asyncapi import asyncapi_document
from assetbus.contract.documents import CONTRACT_FILES, render_documents, stale_documents, write_documents

__all__ = ["CONTRACT_FILES", "asyncapi_document", "render_documents", "stale_documents", "write_documents"]
