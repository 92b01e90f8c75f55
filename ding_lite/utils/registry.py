"""Name -> class registries (policies, envs, models, buffers, env managers), as in DI-engine.

``@POLICY_REGISTRY.register('my_policy')`` on a class registers it; ``import_names`` in a config lists modules to
import so that their decorators run before lookup.
"""
import importlib
import inspect
from typing import Any, Callable, Dict, Iterable, List, Optional

from .errors import RegistryError, UserError
from .suggest import did_you_mean


def _origin(obj: Any) -> str:
    """Where ``obj`` was defined, as 'module.qualname (file:line)'."""
    module = getattr(obj, "__module__", "?")
    qualname = getattr(obj, "__qualname__", repr(obj))
    try:
        location = f" ({inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]})"
    except (TypeError, OSError):
        location = ""
    return f"{module}.{qualname}{location}"


def _same_definition(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are the same class from the same source (a module imported twice)."""
    if a is b:
        return True
    try:
        return (a.__qualname__ == b.__qualname__ and inspect.getsourcefile(a) == inspect.getsourcefile(b))
    except (AttributeError, TypeError):
        return False


class Registry:
    """A named table of classes (or factories). Lookups of a missing name fail with the registered names listed."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: Dict[str, Any] = {}

    def register(self, name: Optional[str] = None, obj: Any = None, force_overwrite: bool = False) -> Callable:
        """Register ``obj`` under ``name``; used as a decorator when ``obj`` is None.

        A second registration of another object under the same name is an error naming the first one's origin,
        unless ``force_overwrite=True``. Re-importing the module that defines the same class is not a duplicate.
        """

        def _do(target: Any) -> Any:
            key = name if name is not None else target.__name__
            old = self._entries.get(key)
            if old is not None and not force_overwrite and not _same_definition(old, target):
                raise RegistryError(
                    f"{self.kind} '{key}' is already registered by {_origin(old)}; pick another name, or pass "
                    f"force_overwrite=True to replace it on purpose (new: {_origin(target)})"
                )
            self._entries[key] = target
            return target

        if obj is not None:
            return _do(obj)
        return _do

    def get(self, name: str) -> Any:
        """The object registered as ``name``; an unknown name raises ``RegistryError`` listing the known ones."""
        if name not in self._entries:
            raise RegistryError(
                f"unknown {self.kind} '{name}'{did_you_mean(str(name), self._entries)}; registered: "
                f"{', '.join(sorted(self._entries)) or '(none)'}. A type of your own needs its module in import_names."
            )
        return self._entries[name]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``get(name)(*args, **kwargs)``; errors raised by the constructor propagate unchanged."""
        return self.get(name)(*args, **kwargs)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def keys(self) -> List[str]:
        return sorted(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.keys()})"


def import_modules(names: Iterable[str], where: str = "import_names") -> None:
    """Import each module in ``names`` so its registry decorators run; a missing module is a ``UserError``."""
    for module in names or []:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name and module.startswith(err.name):
                raise UserError(
                    f"{where}: cannot import module '{module}' ({err}); check the spelling and that its directory "
                    f"is on PYTHONPATH (the current directory is, when you run from it)"
                ) from None
            raise


POLICY_REGISTRY = Registry("policy")
ENV_REGISTRY = Registry("env")
ENV_MANAGER_REGISTRY = Registry("env manager")
MODEL_REGISTRY = Registry("model")
BUFFER_REGISTRY = Registry("buffer")
