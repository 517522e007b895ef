"""Everything about a bot: the ONNX contract, validation, the model host, players and search.

Kept light: model host children import this package too.
"""

import os

# ONNX Runtime 1.31 keeps a device id and an event store under ~/.cache and writes a session file
# into the working directory unless this is set before it is imported; every module of this
# package that imports onnxruntime is imported after this line.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
