"""The contract documents generated from the code: AsyncAPI (topics), OpenAPI (HTTP), JSON Schemas."""
