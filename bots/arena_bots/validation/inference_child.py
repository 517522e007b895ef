"""The child process that runs onnx's C++ checker and shape inference on an untrusted model.

Run as a script by `bounds.infer_isolated`, never imported: it needs nothing but the standard
library and onnx. Shape inference with data propagation materialises the values of 1-D tensors,
and a hostile graph (a chain of Concat nodes doubling a vector, say) grows that without bound;
here it only exhausts this process's address-space limit. Crashes of the C++ code stay here too.

Protocol: argv[1] is a JSON config {"batches": [...], "memory_bytes": n, "cpu_seconds": n}; stdin
holds the rebuilt model, whose inputs have a batch dimension first. stdout receives one JSON
object: {"shapes": {batch: {tensor: [[dims...], elem_type]}}} with the tensors whose shape came
out fully static, or {"error": code, "message": text}.
"""

import json
import resource
import sys

import onnx

_MESSAGE_CHARS = 300


def main() -> None:
    config = json.loads(sys.argv[1])
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_CPU, config["cpu_seconds"])
    _limit(resource.RLIMIT_AS, config["memory_bytes"])
    model = onnx.ModelProto.FromString(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(_verdict(model, config["batches"])))


def _verdict(model: onnx.ModelProto, batches: list[int]) -> dict:
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        return {"error": "onnx_invalid", "message": f"the model is not valid ONNX: {_first_line(error)}"}
    try:
        return {"shapes": {batch: _static_shapes(model, batch) for batch in batches}}
    except Exception as error:  # onnx raises InferenceError, ValidationError or RuntimeError
        message = f"ONNX shape inference fails on the model: {_first_line(error)}"
        return {"error": "shape_inference_failed", "message": message}


def _static_shapes(model: onnx.ModelProto, batch: int) -> dict[str, list]:
    """Tensor name -> [dims, elem_type] for every graph input, output and intermediate whose shape
    is fully static once the batch dimension is `batch`."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for value in probe.graph.input:
        value.type.tensor_type.shape.dim[0].dim_value = batch
    inferred = onnx.shape_inference.infer_shapes(probe, check_type=True, strict_mode=True, data_prop=True)
    graph = inferred.graph
    shapes = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor_type = value.type.tensor_type
        dims = tensor_type.shape.dim
        if tensor_type.HasField("shape") and all(dim.HasField("dim_value") for dim in dims):
            shapes[value.name] = [[dim.dim_value for dim in dims], tensor_type.elem_type]
    return shapes


def _limit(kind: int, value: int) -> None:
    """Lowers a limit, never above the current hard limit."""
    _, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:_MESSAGE_CHARS] if lines else type(error).__name__


if __name__ == "__main__":
    main()
