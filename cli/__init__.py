"""archline's command line (click). Importing it makes shell completion safe: a malformed completion request
offers nothing instead of a traceback (archline.cli.complete.register)."""

from archline.cli.complete import register as _register_completion

_register_completion()
