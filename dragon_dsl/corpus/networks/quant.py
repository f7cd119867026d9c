"""Weight-quantised linear layers, as inference runtimes write them: a packed integer weight and its
scales are parameters; the forward pass dequantises the weight, then multiplies.

int8: one signed byte per weight, one scale per output row. int4: two unsigned nibbles per byte (low
nibble first), zero point 8, one scale per group of 128 inputs (32 when 128 does not divide them).
`quantize_linears` swaps every linear layer of a model (nn.Linear and GPT-2's Conv1D) for one.
"""

from __future__ import annotations


def dequant_linear_class():
    """The module class (made on first use, so that importing this module needs no torch)."""
    import torch

    class DequantLinear(torch.nn.Module):
        def __init__(self, in_features: int, out_features: int, bits: int, bias: bool, dtype, device=None):
            super().__init__()
            if bits not in (4, 8):
                raise ValueError(f"bits must be 4 or 8, not {bits}")
            if bits == 4 and in_features % 2:
                raise ValueError(f"int4 packing needs an even number of inputs, not {in_features}")
            self.in_features, self.out_features, self.bits = in_features, out_features, bits
            self.group = in_features if bits == 8 else (128 if in_features % 128 == 0 else 32)
            packed = (out_features, in_features) if bits == 8 else (out_features, in_features // 2)
            qtype = torch.int8 if bits == 8 else torch.uint8
            # integer parameters cannot require gradients; as parameters they stay inputs of the program
            self.qweight = torch.nn.Parameter(torch.zeros(packed, dtype=qtype, device=device), requires_grad=False)
            self.scales = torch.nn.Parameter(
                torch.ones((out_features, in_features // self.group), dtype=dtype, device=device), requires_grad=False
            )
            self.bias = (
                torch.nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device), requires_grad=False)
                if bias
                else None
            )

        def weight(self):
            if self.bits == 8:
                w = self.qweight.to(self.scales.dtype)
            else:
                # widened first, as runtimes unpack nibbles in 32-bit words; TVM's frontend has no right shift
                packed = self.qweight.to(torch.int32)
                low, high = torch.bitwise_and(packed, 15), torch.floor_divide(packed, 16)
                w = torch.stack([low, high], dim=-1).reshape(self.out_features, self.in_features)
                w = w.to(self.scales.dtype) - 8
            groups = w.reshape(self.out_features, self.in_features // self.group, self.group)
            return (groups * self.scales.unsqueeze(-1)).reshape(self.out_features, self.in_features)

        def forward(self, x):
            return torch.nn.functional.linear(x, self.weight(), self.bias)

    return DequantLinear


def quantize_linears(model, bits: int, dtype, device="meta") -> int:
    """Replace every linear layer of MODEL (in place) by a dequantising one of the same shape; returns
    how many were replaced. Embeddings and convolutions keep their weights."""
    import torch

    cls = dequant_linear_class()
    replaced = 0
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            shape = _linear_shape(child, torch)
            if shape is None:
                continue
            in_features, out_features, has_bias = shape
            setattr(parent, child_name, cls(in_features, out_features, bits, has_bias, dtype, device))
            replaced += 1
    return replaced


def _linear_shape(module, torch):
    """(in, out, has bias) of a linear layer, None for anything else."""
    if isinstance(module, torch.nn.Linear):
        return module.in_features, module.out_features, module.bias is not None
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):  # GPT-2: weight is (in, out)
        return module.weight.shape[0], module.nf, module.bias is not None
    return None
