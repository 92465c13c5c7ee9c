"""The synthetic U-Net: an encoder of conv levels, each halving the image, a decoder that doubles it back
and concatenates, at each level, the encoder's activation of that size (the long skip connections: an
encoder activation lives from its level of the encoder to the same level of the decoder, across the
whole decoder below it, and its gradient from the decoder's backward back to the encoder's)."""
from __future__ import annotations

from .synth_stream import F32, H2D_BYTES_PER_S, I64, Model, Stream, Tensor, check_dtype, check_sizes, new_writer, train
from .trace_format import Trace

_IN_CHANNELS = 3


class _UNet(Model):
    """U-Net (two 3x3 conv + ReLU per level, 2x2 max pooling down, 2x2 transposed convolution up, a 1x1
    head, per-pixel cross-entropy) trained with fused Adam."""

    def __init__(self, stream: Stream, levels, width, image, batch, classes, dtype_bytes):
        super().__init__(stream, dtype_bytes)
        self.N, self.image, self.classes = batch, image, classes
        channels = [width << i for i in range(levels + 1)]
        self.encoder = [[self._conv(_IN_CHANNELS if i == 0 else channels[i - 1], channels[i], 3),
                         self._conv(channels[i], channels[i], 3)] for i in range(levels + 1)]  # last: bottleneck
        self.up = [self._conv(channels[i + 1], channels[i], 2) for i in range(levels)]
        self.decoder = [[self._conv(2 * channels[i], channels[i], 3), self._conv(channels[i], channels[i], 3)]
                        for i in range(levels)]
        self.head = self._conv(width, classes, 1)
        self._allocate_grads()

    @staticmethod
    def parameter_count(levels, width, classes) -> int:
        """Weights and biases of every convolution."""
        channels = [width << i for i in range(levels + 1)]
        count = 0
        for i in range(levels + 1):
            cin = _IN_CHANNELS if i == 0 else channels[i - 1]
            count += cin * channels[i] * 9 + channels[i] * channels[i] * 9 + 2 * channels[i]
        for i in range(levels):
            count += channels[i + 1] * channels[i] * 4 + channels[i]
            count += 2 * channels[i] * channels[i] * 9 + channels[i] * channels[i] * 9 + 2 * channels[i]
        return count + width * classes + classes

    def _conv(self, cin: int, cout: int, k: int) -> dict:
        return {"cin": cin, "cout": cout, "k": k, "w": self._param(cout * cin * k * k, normal=True),
                "b": self._param(cout, normal=False)}

    def _activation(self, channels: int, size: int) -> Tensor:
        return self.s.empty(self.N * channels * size * size * self.d)

    def _flops(self, c: dict, size: int) -> float:
        """A convolution's flops at output `size` (a transposed 2x2 one: one tap per output pixel)."""
        taps = 1 if c in self.up else c["k"] ** 2
        return 2 * self.N * c["cout"] * size * size * c["cin"] * taps

    def _conv_forward(self, c: dict, x: Tensor, size: int, relu: bool = True) -> dict:
        """The convolution (with ReLU in place) at output `size`: what its backward needs."""
        y = self._activation(c["cout"], size)
        name = self.n["conv_dgrad"] if c in self.up else self.n["conv_fwd"]
        self.s.launch(name, reads=[x, c["w"], c["b"]], writes=[y], flops=self._flops(c, size))
        if relu:
            self.s.launch("vectorized_elementwise_kernel<relu>", updates=[y])
        return {"conv": c, "x": x, "y": y, "size": size, "relu": relu}

    def _conv_backward(self, v: dict, dy: Tensor, input_grad: bool = True, owns_grad: bool = True) -> Tensor | None:
        """Backward of _conv_forward from the grad of its output (freed unless a part of a larger grad its
        owner frees); frees the output if it is still held."""
        s, c, size = self.s, v["conv"], v["size"]
        if v["relu"]:
            dr = s.empty(dy.nbytes)
            s.launch("vectorized_elementwise_kernel<threshold_backward>", reads=[dy, v["y"]], writes=[dr])
            if owns_grad:
                s.free(dy)
            dy, owns_grad = dr, True
        if v["y"] is not None:
            s.free(v["y"])
        flops = self._flops(c, size)
        dx = None
        if input_grad:
            dx = s.empty(v["x"].nbytes)
            s.launch(self.n["conv_fwd"] if c in self.up else self.n["conv_dgrad"], reads=[dy, c["w"]], writes=[dx],
                     flops=flops)
        s.launch(self.n["conv_wgrad"], reads=[dy, v["x"]], updates=[self.grad[c["w"]]], flops=flops)
        s.launch("reduce_kernel<sum>", reads=[dy], updates=[self.grad[c["b"]]])
        if owns_grad:
            s.free(dy)
        return dx

    def forward(self) -> dict:
        s, N, size = self.s, self.N, self.image
        img, targets = self._activation(_IN_CHANNELS, size), s.empty(N * size * size * I64)
        s.launch("[memcpy HtoD]", writes=[img], bytes_per_s=H2D_BYTES_PER_S)
        s.launch("[memcpy HtoD]", writes=[targets], bytes_per_s=H2D_BYTES_PER_S)
        saved = {"img": img, "targets": targets, "encoder": [], "pooled": [], "decoder": {}}
        x = img
        for level, convs in enumerate(self.encoder):
            applied = []
            for c in convs:
                applied.append(self._conv_forward(c, x, size))
                x = applied[-1]["y"]
            saved["encoder"].append(applied)
            if level < len(self.up):
                pooled = self._activation(c["cout"], size // 2)
                indices = s.empty(N * c["cout"] * (size // 2) ** 2 * I64)
                s.launch("max_pool_forward_nchw", reads=[x], writes=[pooled, indices])
                saved["pooled"].append((pooled, indices))
                x, size = pooled, size // 2
        for level in reversed(range(len(self.up))):
            size *= 2
            up = self._conv_forward(self.up[level], x, size, relu=False)
            skip = saved["encoder"][level][-1]["y"]
            cat = s.empty(up["y"].nbytes + skip.nbytes)
            s.launch("CatArrayBatchedCopy", reads=[up["y"], skip], writes=[cat])
            s.free(up["y"])
            up["y"] = None
            applied = [up]
            x = cat
            for c in self.decoder[level]:
                applied.append(self._conv_forward(c, x, size))
                x = applied[-1]["y"]
            saved["decoder"][level] = applied
        head = saved["head"] = self._conv_forward(self.head, x, size, relu=False)
        saved["lsm"] = self._elementwise("cunn_SoftMaxForward<LogSoftMax>", head["y"])
        s.free(head["y"])
        head["y"] = None
        saved["loss"], saved["total_weight"] = s.empty(F32), s.empty(F32)
        s.launch("nll_loss2d_forward_kernel", reads=[saved["lsm"], targets],
                 writes=[saved["loss"], saved["total_weight"]])
        return saved

    def backward(self, saved: dict) -> None:
        s, levels = self.s, len(self.up)
        dx = self._conv_backward(saved["head"], self._loss_backward(saved))
        skip_grads = {}
        for level in range(levels):                           # the decoder's levels, the last run first
            up, first, second = saved["decoder"][level]
            dx = self._conv_backward(second, dx)
            dcat = self._conv_backward(first, dx)
            s.free(first["x"])                                # the concatenation
            half = dcat.nbytes // 2
            skip_grads[level] = (dcat, dcat.part(half, half))
            dx = self._conv_backward(up, dcat.part(0, half), owns_grad=False)
        for level in reversed(range(levels + 1)):
            applied = saved["encoder"][level]
            if level < levels:
                pooled, indices = saved["pooled"][level]
                dy = s.empty(applied[-1]["y"].nbytes)
                s.launch("max_pool_backward_nchw", reads=[dx, indices], writes=[dy])
                s.free(dx, indices, pooled)
                dcat, dskip = skip_grads.pop(level)
                dx = self._elementwise("vectorized_elementwise_kernel<add>", dy, dskip)
                s.free(dy, dcat)
            dx = self._conv_backward(applied[1], dx)
            dx = self._conv_backward(applied[0], dx, input_grad=level > 0)
        s.free(saved["img"])


def synth_unet(levels: int = 4, width: int = 64, image: int = 256, batch: int = 8, classes: int = 4,
               iterations: int = 12, seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a U-Net trained with Adam for per-pixel classification: `iterations` steps of `batch`
    images of `image` x `image` pixels; `levels` poolings, `width` channels at the top level, doubling
    per level down."""
    check_sizes(levels=levels, width=width, image=image, batch=batch, classes=classes, iterations=iterations)
    check_dtype(dtype_bytes)
    if image % (1 << levels):
        raise ValueError(f"image ({image}) must be a multiple of 2**levels ({1 << levels})")
    config = dict(levels=levels, width=width, image=image, batch=batch, classes=classes, iterations=iterations,
                  seed=seed, dtype_bytes=dtype_bytes)
    writer = new_writer("unet", config, _UNet.parameter_count(levels, width, classes))
    stream = Stream(writer, seed, dtype_bytes)
    model = _UNet(stream, levels, width, image, batch, classes, dtype_bytes)
    train(writer, model, iterations)
    return writer.finish()
