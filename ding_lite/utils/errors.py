"""Error types that separate the user's mistakes from bugs.

The CLI prints a ``UserError`` as one clear message (no traceback) and exits non-zero; any other exception is a bug
and keeps its traceback.
"""


class UserError(Exception):
    """A mistake in the user's input (a config key, a CLI flag, a file, an env id) with the fix in its message."""


class ConfigError(UserError, ValueError):
    """An invalid config: unknown key, wrong type or impossible value. The message names the full key path."""


class RegistryError(UserError, LookupError):
    """An unknown or duplicate name in a registry; the message lists the registered names."""

    def __str__(self) -> str:  # LookupError would quote the message like a key
        return str(self.args[0]) if self.args else ""
