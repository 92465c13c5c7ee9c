"""The synthetic transformer trained on sequences bucketed by length: each step's batch is padded to one
of a few lengths, taken in turn, so the step whose shapes (and launches) the current one repeats is one
cycle of buckets back, not the last one."""
from __future__ import annotations

from .synth_stream import Stream, check_dtype, check_sizes, new_writer, train
from .synth_transformer import _GPT
from .trace_format import Trace


def bucket_lengths(seq: int, buckets: int) -> list[int]:
    """The padded lengths, longest first: seq, then seq less one `buckets`-th of it at a time."""
    return [seq * (buckets - i) // buckets for i in range(buckets)]


class _BucketedGPT(_GPT):
    """The GPT-2-like model whose step i runs on batch x lengths[i % len(lengths)] tokens."""

    def __init__(self, stream: Stream, layers, hidden, heads, lengths, batch, vocab, dtype_bytes):
        super().__init__(stream, layers, hidden, heads, max(lengths), batch, vocab, dtype_bytes)
        self.lengths = lengths

    def begin_iteration(self, iteration: int) -> None:
        self.S = self.lengths[iteration % len(self.lengths)]
        self.T = self.B * self.S


def synth_bucketed(layers: int = 12, hidden: int = 1024, heads: int = 16, seq: int = 1024, buckets: int = 3,
                   batch: int = 4, vocab: int = 50304, iterations: int = 12, seed: int = 0,
                   dtype_bytes: int = 2) -> Trace:
    """Trace of the GPT-2-like transformer trained with Adam on length buckets: step i pads its batch x
    length tokens to bucket i % buckets of bucket_lengths(seq, buckets) (1024, 682, 341 by default);
    buckets=2 alternates two shapes."""
    check_sizes(layers=layers, hidden=hidden, heads=heads, seq=seq, buckets=buckets, batch=batch, vocab=vocab,
                iterations=iterations)
    check_dtype(dtype_bytes)
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    if buckets > seq:
        raise ValueError(f"buckets ({buckets}) must not exceed seq ({seq}): each bucket needs a length")
    config = dict(layers=layers, hidden=hidden, heads=heads, seq=seq, buckets=buckets, batch=batch, vocab=vocab,
                  iterations=iterations, seed=seed, dtype_bytes=dtype_bytes)
    writer = new_writer("bucketed", config, _GPT.parameter_count(layers, hidden, seq, vocab))
    stream = Stream(writer, seed, dtype_bytes)
    model = _BucketedGPT(stream, layers, hidden, heads, bucket_lengths(seq, buckets), batch, vocab, dtype_bytes)
    train(writer, model, iterations)
    return writer.finish()
