"""pytest plugin of the conformance suite (placeholder; see issue 4)."""
