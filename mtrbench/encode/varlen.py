"""Unpadded ("varlen") attention for transformers encoders, registered as an attention implementation.

A packed batch is one row of concatenated sequences plus ``cu_seq_lens_q`` boundaries (the layout
of ``DataCollatorWithFlattening``). Linear layers then touch only real tokens, and attention runs
per sequence. On CUDA with half precision the kernel is torch's own flash ``varlen_attn`` (torch >=
2.10, no extra package), else ``flash_attn``'s if installed; anywhere else (CPU, fp32) a reference
loop of per-sequence SDPA calls, which is slow but lets the packing be checked for exactness.
Calls without ``cu_seq_lens_q`` (ordinary padded batches) go to transformers' SDPA unchanged.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

NAME = "mtrbench_varlen"


def adapt_torch_varlen(varlen_attn):
    """fn(q, k, v, cu, max_len, scale, causal=False) over torch's ``varlen_attn``. Its first release (torch 2.10)
    takes no ``scale`` and always uses 1/sqrt(head_dim): there another scale is folded into the queries.
    Decoder layers (causal, grouped key/value heads) need ``window_size`` and ``enable_gqa``: a torch without
    them raises, and the engine's self-check then pads instead."""
    import inspect

    parameters = inspect.signature(varlen_attn).parameters
    takes_scale = "scale" in parameters

    def torch_varlen(q, k, v, cu, max_len, scale, causal=False):
        decoder: dict[str, object] = {}
        if causal:
            decoder["window_size"] = (-1, 0)
        if k.shape[1] != q.shape[1]:
            decoder["enable_gqa"] = True
        if any(name not in parameters for name in decoder):
            raise ValueError(f"this torch's varlen_attn takes no {', '.join(sorted(set(decoder) - set(parameters)))}")
        if takes_scale:
            return varlen_attn(q, k, v, cu, cu, max_len, max_len, scale=scale, **decoder)
        default = q.shape[-1] ** -0.5
        if scale is not None and abs(scale - default) > 1e-12 * default:
            q = q * (scale / default)
        return varlen_attn(q, k, v, cu, cu, max_len, max_len, **decoder)

    return torch_varlen


@functools.lru_cache(maxsize=1)
def _cuda_kernel():
    """(name, fn(q, k, v, cu, max_len, scale)) for (T, H, D) half-precision CUDA tensors, or None."""
    try:
        from torch.nn.attention.varlen import varlen_attn

        return "torch.varlen_attn", adapt_torch_varlen(varlen_attn)
    except ImportError:
        pass
    try:
        from flash_attn import flash_attn_varlen_func

        def flash_varlen(q, k, v, cu, max_len, scale, causal=False):
            # flash_attn takes grouped key/value heads as they are
            return flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len, softmax_scale=scale, causal=causal)

        return "flash_attn", flash_varlen
    except ImportError:
        return None


def kernel_name(device: torch.device | str, dtype: torch.dtype) -> str:
    """Which code path a packed batch on this device/dtype takes."""
    if torch.device(device).type == "cuda" and dtype in (torch.float16, torch.bfloat16) and _cuda_kernel():
        return _cuda_kernel()[0]
    return "reference"


def _reference(q, k, v, cu, scale, causal=False):
    out = torch.empty_like(q)
    bounds = cu.tolist()
    grouped = k.shape[1] != q.shape[1]
    for start, end in zip(bounds[:-1], bounds[1:]):
        # (L, H, D) -> (H, L, D) for SDPA
        seg = F.scaled_dot_product_attention(
            q[start:end].transpose(0, 1),
            k[start:end].transpose(0, 1),
            v[start:end].transpose(0, 1),
            scale=scale,
            is_causal=causal,
            enable_gqa=grouped,
        )
        out[start:end] = seg.transpose(0, 1)
    return out


def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None, **kwargs):
    cu = kwargs.get("cu_seq_lens_q")
    if cu is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    if query.shape[0] != 1:
        raise ValueError("packed attention expects one row of concatenated sequences")
    # transformers passes (batch, heads, tokens, dim); kernels want (tokens, heads, dim)
    q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))
    # decoder layers (Qwen3, Mistral, Llama) attend causally within each packed sequence
    causal = bool(getattr(module, "is_causal", False))
    max_len = int(kwargs.get("max_length_q") or int((cu[1:] - cu[:-1]).max()))
    window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    if window and max_len > window:  # towers refuse packing for such models (Tower.enable_packing); a safety net
        raise ValueError(f"a packed sequence of {max_len} tokens exceeds the {window}-token sliding window")
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16) and _cuda_kernel():
        out = _cuda_kernel()[1](q.contiguous(), k.contiguous(), v.contiguous(), cu, max_len, scaling, causal)
    else:
        out = _reference(q, k, v, cu, scaling, causal)
    return out.unsqueeze(0), None  # (1, tokens, heads, dim), as transformers' attention functions return


def _mask(*args, attention_mask=None, **kwargs):
    # A packed call has no padding mask and must never get a dense (T x T) one; padded calls get SDPA's mask.
    if attention_mask is None:
        return None
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(*args, attention_mask=attention_mask, **kwargs)


@functools.lru_cache(maxsize=1)
def register() -> str:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, _mask)
    return NAME


def position_offset(model: torch.nn.Module) -> int:
    """First position id of a sequence: 0, or padding_idx + 1 for RoBERTa-style learned positions."""
    for module in model.modules():
        padding_idx = getattr(module, "padding_idx", None)
        if isinstance(padding_idx, int) and isinstance(
            getattr(module, "position_embeddings", None), torch.nn.Embedding
        ):
            return padding_idx + 1
    return 0
