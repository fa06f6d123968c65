"""Exercise scaffolds (not yet written: see exercises/README.md)."""
