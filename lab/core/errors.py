"""User-facing errors, and the version of every ``--json`` document.

LabError: the CLI prints it as one line and exits with code 2.
"""

# Every --json object carries "schema_version"; its JSON Schema is docs/schemas/<command>.json.
# Bump it when a key changes meaning or goes away (adding keys keeps the version).
SCHEMA_VERSION = 1


class LabError(Exception):
    """Bad input or an unusable environment, described in one line that names the limit."""
