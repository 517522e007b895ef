"""Everything about a bot: the ONNX contract, validation, the model host, players and search."""
