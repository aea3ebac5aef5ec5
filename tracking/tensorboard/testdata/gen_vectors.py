"""Generates vectors.txt: TFRecord-framed events encoded by TensorBoard's own
protos and tensorboardX's record framing, for the Go encoder to match byte
for byte. Run with the goaccel venv's python."""
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboardX.record_writer import masked_crc32c
import struct

def frame(data):
    header = struct.pack("Q", len(data))
    return header + struct.pack("I", masked_crc32c(header)) + data + struct.pack("I", masked_crc32c(data))

out = []
out.append(("crc_123456789", struct.pack("I", masked_crc32c(b"123456789"))))
out.append(("crc_empty", struct.pack("I", masked_crc32c(b""))))
ev = event_pb2.Event(wall_time=1.5, file_version="brain.Event:2")
out.append(("file_version", frame(ev.SerializeToString())))
ev = event_pb2.Event(wall_time=1.5, step=7, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.25)]))
out.append(("scalar", frame(ev.SerializeToString())))
ev = event_pb2.Event(wall_time=2.25, step=300, summary=summary_pb2.Summary(value=[
    summary_pb2.Summary.Value(tag="a", simple_value=-1.0),
    summary_pb2.Summary.Value(tag="train/acc", simple_value=0.5)]))
out.append(("two_scalars", frame(ev.SerializeToString())))
with open("vectors.txt", "w") as f:
    for name, b in out:
        f.write(f"{name} {b.hex()}\n")
