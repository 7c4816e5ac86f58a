"""Size limits shared by emitters (checked before sending) and the persister (enforced)."""

EXTRA_MAX_BYTES = 64 * 1024
"""`extra` serialized as compact UTF-8 JSON may not be larger than this."""

NAME_MAX_LENGTH = 1500
"""Longest asset name or URI."""

KEY_MAX_LENGTH = 250
"""Longest partition key or dedupe key."""
