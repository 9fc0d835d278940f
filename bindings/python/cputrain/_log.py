"""The library's log messages. By default they go to the `logging` module
(logger "cputrain"), as any Python library's do, so the application decides
where they end up; set_log_callback() replaces that, set_log_level() chooses
how much the library sends."""

import atexit
import enum
import logging

from ._lib import LOG_FN, lib


def _read_levels():
    # ct_log_level_name names 1, 2, ... and answers "off" past the last one.
    members = {"OFF": 0}
    value = 1
    while True:
        name = lib.ct_log_level_name(value).decode()
        if name == "off":
            return members
        members[name.upper()] = value
        value += 1


LogLevel = enum.IntEnum("LogLevel", _read_levels(), module=__name__)

logger = logging.getLogger("cputrain")

_TO_LOGGING = {
    "ERROR": logging.ERROR,
    "WARNING": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
}


def log_to_python_logging(level, message):
    """The default callback: hand the message to logging.getLogger("cputrain")."""
    name = level.name if isinstance(level, LogLevel) else ""
    logger.log(_TO_LOGGING.get(name, logging.DEBUG), "%s", message)


# The library's own stderr writer, installable without a Python trampoline
# (so it keeps working while the interpreter shuts down).
LOG_TO_STDERR = LOG_FN(("ct_log_to_stderr", lib))

_python_callback = None
# ctypes does not take None for a function-pointer argument; this is NULL.
_NO_CALLBACK = LOG_FN()


@LOG_FN
def _trampoline(level, message, user):
    # The one C-callable object handed to the library for Python callbacks.
    # It lives as long as this module, so the library never holds a pointer
    # to a collected CFUNCTYPE. An exception raised by the callback cannot
    # cross into C; ctypes reports it through sys.unraisablehook.
    callback = _python_callback
    if callback is None:
        return
    try:
        level = LogLevel(level)
    except ValueError:
        pass
    callback(level, message.decode("utf-8", "replace"))


_installed = None  # what the library currently calls, kept referenced


def set_log_callback(callback):
    """Send the library's messages to callback(level: LogLevel, message: str).

    None silences the library; LOG_TO_STDERR installs its C stderr writer;
    log_to_python_logging restores the default. The callback may be called
    from the library's own threads."""
    global _python_callback, _installed
    if callback is None:
        lib.ct_log_set_callback(_NO_CALLBACK, None)
        _python_callback = _installed = None
    elif isinstance(callback, LOG_FN):
        lib.ct_log_set_callback(callback, None)
        _python_callback, _installed = None, callback
    elif callable(callback):
        _python_callback = callback
        lib.ct_log_set_callback(_trampoline, None)
        _installed = _trampoline
    else:
        raise TypeError("log callback must be callable, LOG_TO_STDERR or None, not %r"
                        % type(callback).__name__)


def set_log_level(level):
    """Most verbose level the library sends: a LogLevel or its name ("info")."""
    if isinstance(level, str):
        try:
            level = LogLevel[level.upper()]
        except KeyError:
            raise ValueError("unknown log level %r; one of %s"
                             % (level, ", ".join(m.name.lower() for m in LogLevel))) from None
    else:
        level = LogLevel(level)  # ValueError for numbers the library does not know
    lib.ct_log_set_level(level)


def get_log_level():
    return LogLevel(lib.ct_log_get_level())


def _remove_python_callback_at_exit():
    # Library threads must not call into an interpreter that is finalising.
    if _installed is _trampoline:
        lib.ct_log_set_callback(_NO_CALLBACK, None)


set_log_callback(log_to_python_logging)
atexit.register(_remove_python_callback_at_exit)
