"""quantd.QuantdError: every failure of a job or a call, local or remote."""


class QuantdError(Exception):
    """A failed job or call.

    code: the status code's name ("INVALID_ARGUMENT", "NOT_FOUND",
    "CANCELLED", ...), the same for the in-process engine (absl) and a
    server (gRPC). message: what failed, naming the field or node at fault.
    """

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @property
    def details(self):
        """The message (the name gRPC gives it)."""
        return self.message

    def __reduce__(self):
        return (type(self), (self.code, self.message))


def from_rpc_error(error):
    """QuantdError from a grpc.RpcError (code name and details)."""
    code = error.code()
    return QuantdError(code.name if code is not None else "UNKNOWN",
                       error.details() or "")
