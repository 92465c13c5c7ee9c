"""The synthetic ResNet (bottleneck blocks): its training trace, kernel by kernel."""
from __future__ import annotations

from .synth_stream import (F32, H2D_BYTES_PER_S, I64, Model, Stream, Tensor, check_dtype, check_sizes, new_writer,
                           train)
from .trace_format import Trace

RESNET_LAYOUTS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
_CLASSES = 1000


class _ResNet(Model):
    """torchvision-style ResNet with bottleneck blocks (stride on the 3x3 conv), trained with SGD + momentum."""

    def __init__(self, stream: Stream, depth, width, image, batch, dtype_bytes):
        super().__init__(stream, dtype_bytes)
        self.N, self.image = batch, image
        self.stem = self._conv_bn(3, width, 7, 2, image)
        size = image // 4
        channels = width
        self.blocks = []
        for stage, count in enumerate(RESNET_LAYOUTS[depth]):
            planes = width << stage
            for i in range(count):
                stride = 2 if stage and i == 0 else 1
                block = {"conv1": self._conv_bn(channels, planes, 1, 1, size),
                         "conv2": self._conv_bn(planes, planes, 3, stride, size),
                         "conv3": self._conv_bn(planes, 4 * planes, 1, 1, size // stride)}
                if i == 0:
                    block["down"] = self._conv_bn(channels, 4 * planes, 1, stride, size)
                self.blocks.append(block)
                channels, size = 4 * planes, size // stride
        self.channels, self.size = channels, size
        self.fc_w = self._param(_CLASSES * channels, normal=True)
        self.fc_b = self._param(_CLASSES, normal=False)
        self._allocate_grads()
        self.momentum: list[Tensor] = []

    @staticmethod
    def parameter_count(depth, width) -> int:
        """Parameters: bias-free convolutions, batch-norm scale and shift, the 1000-class classifier."""
        count = 3 * width * 49 + 2 * width
        channels = width
        for stage, blocks in enumerate(RESNET_LAYOUTS[depth]):
            planes = width << stage
            for i in range(blocks):
                count += channels * planes + planes * planes * 9 + planes * 4 * planes + 2 * (6 * planes)
                if i == 0:
                    count += channels * 4 * planes + 2 * 4 * planes
                channels = 4 * planes
        return count + _CLASSES * channels + _CLASSES

    def _conv_bn(self, cin: int, cout: int, k: int, stride: int, size: int) -> dict:
        """A convolution (input `size` x `size`) and its batch norm: weights and running statistics."""
        layer = {"cin": cin, "cout": cout, "k": k, "stride": stride, "out": size // stride,
                 "w": self._param(cout * cin * k * k, normal=True),
                 "gamma": self._param(cout, normal=False), "beta": self._param(cout, normal=False)}
        layer["running"] = [self.s.empty(cout * F32), self.s.empty(cout * F32), self.s.empty(I64)]
        for buffer in layer["running"]:
            self.s.launch("vectorized_elementwise_kernel<fill>", writes=[buffer])
        return layer

    def _conv_flops(self, c: dict) -> float:
        return 2 * self.N * c["cout"] * c["out"] ** 2 * c["cin"] * c["k"] ** 2

    def _conv_bn_forward(self, c: dict, x: Tensor, relu: bool) -> dict:
        s = self.s
        act = self.N * c["cout"] * c["out"] ** 2 * self.d
        y = s.empty(act)
        s.launch(self.n["conv_fwd"], reads=[x, c["w"]], writes=[y], flops=self._conv_flops(c))
        z, mean, invstd = s.empty(act), s.empty(c["cout"] * F32), s.empty(c["cout"] * F32)
        s.launch("vectorized_elementwise_kernel<add>", updates=[c["running"][2]])
        s.launch("cudnn::bn_fw_tr_1C11_kernel_NCHW", reads=[y, c["gamma"], c["beta"]],
                 writes=[z, mean, invstd], updates=c["running"][:2])
        if relu:
            s.launch("vectorized_elementwise_kernel<relu>", updates=[z])
        return {"y": y, "z": z, "mean": mean, "invstd": invstd}

    def _bn_backward(self, c: dict, v: dict, dz: Tensor) -> Tensor:
        dy = self.s.empty(dz.nbytes)
        self.s.launch("cudnn::bn_bw_1C11_kernel_new", reads=[dz, v["y"], c["gamma"], v["mean"], v["invstd"]],
                      writes=[dy], updates=[self.grad[c["gamma"]], self.grad[c["beta"]]])
        self.s.free(v["y"], v["mean"], v["invstd"])
        return dy

    def _conv_backward(self, c: dict, dy: Tensor, x: Tensor, input_grad: bool = True) -> Tensor | None:
        s, flops = self.s, self._conv_flops(c)
        dx = None
        if input_grad:
            dx = s.empty(self.N * c["cin"] * (c["out"] * c["stride"]) ** 2 * self.d)
            s.launch(self.n["conv_dgrad"], reads=[dy, c["w"]], writes=[dx], flops=flops)
        s.launch(self.n["conv_wgrad"], reads=[dy, x], updates=[self.grad[c["w"]]], flops=flops)
        return dx

    def _conv_bn_backward(self, c: dict, v: dict, dz: Tensor, x: Tensor) -> Tensor:
        """Batch-norm then convolution backward from the grad of the batch norm's output; returns the
        grad of the convolution's input `x`."""
        dy = self._bn_backward(c, v, dz)
        dx = self._conv_backward(c, dy, x)
        self.s.free(dy)
        return dx

    def _relu_backward(self, dz: Tensor, z: Tensor) -> Tensor:
        dr = self.s.empty(dz.nbytes)
        self.s.launch("vectorized_elementwise_kernel<threshold_backward>", reads=[dz, z], writes=[dr])
        return dr

    def forward(self) -> dict:
        s, N, d = self.s, self.N, self.d
        img, targets = s.empty(N * 3 * self.image ** 2 * d), s.empty(N * I64)
        s.launch("[memcpy HtoD]", writes=[img], bytes_per_s=H2D_BYTES_PER_S)
        s.launch("[memcpy HtoD]", writes=[targets], bytes_per_s=H2D_BYTES_PER_S)
        stem = self._conv_bn_forward(self.stem, img, relu=True)
        pooled_size = N * self.stem["cout"] * (self.image // 4) ** 2
        x, indices = s.empty(pooled_size * d), s.empty(pooled_size * I64)
        s.launch("max_pool_forward_nchw", reads=[stem["z"]], writes=[x, indices])
        saved = {"img": img, "targets": targets, "stem": stem, "indices": indices, "p": x, "blocks": []}
        for block in self.blocks:
            v = {"x": x}
            for name in ("conv1", "conv2", "conv3"):
                v[name] = self._conv_bn_forward(block[name], x, relu=name != "conv3")
                x = v[name]["z"]
            identity = v["x"]
            if "down" in block:
                v["down"] = self._conv_bn_forward(block["down"], v["x"], relu=False)
                identity = v["down"]["z"]
            s.launch("vectorized_elementwise_kernel<add>", reads=[identity], updates=[x])
            if "down" in block:
                s.free(v["down"].pop("z"))
            s.launch("vectorized_elementwise_kernel<relu>", updates=[x])
            saved["blocks"].append(v)
        pooled = s.empty(N * self.channels * d)
        s.launch("reduce_kernel<mean>", reads=[x], writes=[pooled])
        logits = s.empty(N * _CLASSES * d)
        s.launch(self.n["gemm_fwd"], reads=[pooled, self.fc_w, self.fc_b], writes=[logits],
                 flops=2 * N * _CLASSES * self.channels)
        lsm = s.empty(logits.nbytes)
        s.launch("cunn_SoftMaxForward<LogSoftMax>", reads=[logits], writes=[lsm])
        s.free(logits)
        loss, total_weight = s.empty(F32), s.empty(F32)
        s.launch("nll_loss_forward_reduce_cuda_kernel_2d", reads=[lsm, targets], writes=[loss, total_weight])
        saved.update(pooled=pooled, lsm=lsm, loss=loss, total_weight=total_weight)
        return saved

    def backward(self, saved: dict) -> None:
        s, N, d = self.s, self.N, self.d
        dlogits = self._loss_backward(saved)
        dpooled = s.empty(saved["pooled"].nbytes)
        flops = 2 * N * _CLASSES * self.channels
        s.launch(self.n["gemm_dgrad"], reads=[dlogits, self.fc_w], writes=[dpooled], flops=flops)
        s.launch(self.n["gemm_wgrad"], reads=[dlogits, saved["pooled"]], updates=[self.grad[self.fc_w]], flops=flops)
        s.launch("reduce_kernel<sum>", reads=[dlogits], updates=[self.grad[self.fc_b]])
        s.free(dlogits, saved["pooled"])
        dx = s.empty(N * self.channels * self.size ** 2 * d)
        s.launch("elementwise_kernel<avg_pool_backward>", reads=[dpooled], writes=[dx])
        s.free(dpooled)
        for block, v in zip(reversed(self.blocks), reversed(saved["blocks"])):
            dx = self._block_backward(block, v, dx)
        s.free(saved["p"])
        stem = saved["stem"]
        dz = s.empty(stem["z"].nbytes)
        s.launch("max_pool_backward_nchw", reads=[dx, saved["indices"]], writes=[dz])
        s.free(dx, saved["indices"])
        dr = self._relu_backward(dz, stem["z"])
        s.free(dz, stem["z"])
        dy = self._bn_backward(self.stem, stem, dr)
        s.free(dr)
        self._conv_backward(self.stem, dy, saved["img"], input_grad=False)
        s.free(dy, saved["img"])

    def _block_backward(self, block: dict, v: dict, dout: Tensor) -> Tensor:
        s = self.s
        z1, z2, out = v["conv1"]["z"], v["conv2"]["z"], v["conv3"]["z"]
        dr3 = self._relu_backward(dout, out)
        s.free(dout, out)
        dz2 = self._conv_bn_backward(block["conv3"], v["conv3"], dr3, z2)
        dr2 = self._relu_backward(dz2, z2)
        s.free(dz2, z2)
        dz1 = self._conv_bn_backward(block["conv2"], v["conv2"], dr2, z1)
        s.free(dr2)
        dr1 = self._relu_backward(dz1, z1)
        s.free(dz1, z1)
        dx = self._conv_bn_backward(block["conv1"], v["conv1"], dr1, v["x"])
        s.free(dr1)
        identity_grad = dr3
        if "down" in block:
            identity_grad = self._conv_bn_backward(block["down"], v["down"], dr3, v["x"])
        total = s.empty(dx.nbytes)
        s.launch("vectorized_elementwise_kernel<add>", reads=[dx, identity_grad], writes=[total])
        s.free(dx, dr3)
        if "down" in block:
            s.free(identity_grad)
        return total

    def step(self) -> None:
        """PyTorch's foreach SGD (momentum 0.9, weight decay): the first step clones the momentum buffers."""
        s, grads = self.s, list(self.grad.values())
        decayed = [s.empty(g.nbytes) for g in grads]
        s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [grads, self.params, decayed],
                       ["read", "read", "write"], self.d)
        if not self.momentum:
            for g in decayed:
                self.momentum.append(s.empty(g.nbytes))
                s.launch("unrolled_elementwise_kernel<copy>", reads=[g], writes=[self.momentum[-1]])
        else:
            s.multi_tensor("multi_tensor_apply_kernel<foreach_mul>", [self.momentum], ["update"], self.d)
            s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [self.momentum, decayed],
                           ["update", "read"], self.d)
        s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [self.params, self.momentum],
                       ["update", "read"], self.d)
        s.free(*decayed)


def synth_cnn(depth: int = 50, width: int = 64, image: int = 224, batch: int = 32, iterations: int = 4,
              seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a ResNet (bottleneck blocks, 1000 classes) trained with SGD + momentum: `iterations`
    steps of `batch` images of `image` x `image` pixels; width is the stem's channels."""
    check_sizes(depth=depth, width=width, image=image, batch=batch, iterations=iterations)
    check_dtype(dtype_bytes)
    if depth not in RESNET_LAYOUTS:
        raise ValueError(f"depth must be one of {sorted(RESNET_LAYOUTS)}, got {depth}")
    if image % 32:
        raise ValueError(f"image must be a multiple of 32 (five stride-2 stages), got {image}")
    config = dict(depth=depth, width=width, image=image, batch=batch, iterations=iterations, seed=seed,
                  dtype_bytes=dtype_bytes)
    writer = new_writer("cnn", config, _ResNet.parameter_count(depth, width))
    stream = Stream(writer, seed, dtype_bytes)
    model = _ResNet(stream, depth, width, image, batch, dtype_bytes)
    train(writer, model, iterations)
    return writer.finish()
