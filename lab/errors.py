"""User-facing errors: the CLI prints them as one line and exits with code 2."""


class LabError(Exception):
    """Bad input or an unusable environment, described in one line that names the limit."""
