"""archline's command line (click). Importing it makes shell completion safe (a malformed completion request
offers nothing instead of a traceback: archline.cli.complete.register) and gives usage errors that click raises
without a context the command they are about (archline.cli.usage.attach_context)."""

from archline.cli.complete import register as _register_completion
from archline.cli.usage import attach_context as _attach_context

_register_completion()
_attach_context()
