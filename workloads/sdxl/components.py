"""SDXL base 1.0's pipeline without the Hub: its component configs as data, and the pipeline built from them.

`SDXL_BASE` holds the real shapes, copied from stabilityai/stable-diffusion-xl-base-1.0 (unet/,
text_encoder/, text_encoder_2/, scheduler/) and madebyollin/sdxl-vae-fp16-fix (its VAE, which does
not force an fp32 upcast for decoding). The UNet has 2,567.5M parameters. `TINY` is the same
architecture shrunk for a CPU smoke run (the sizes diffusers' own SDXL pipeline tests use).

The tokenizers: the real ones are CLIP BPE vocabularies of 49,408 entries that only the Hub has.
`local_clip_tokenizer` writes a byte-level CLIP vocabulary (the 256 byte symbols, each also as a
word end, and the two special tokens; no merges) and loads it with the pipeline's own tokenizer
class. The pipeline pads every prompt to 77 tokens, so the text encoders, which keep their real
49,408-row embedding tables, run the same 77-token forward either way; only which ids fill the 77
slots differs. The prompt goes through the pipeline's whole path (tokenize, both encoders, pooled
embedding, the zero negative embedding of `force_zeros_for_empty_prompt`), each call, as in the study.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

BASE_REPO = "stabilityai/stable-diffusion-xl-base-1.0"
VAE_REPO = "madebyollin/sdxl-vae-fp16-fix"

_EULER = {  # scheduler/scheduler_config.json, the pipeline's default (less the keys EulerDiscreteScheduler ignores)
    "beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear", "num_train_timesteps": 1000,
    "prediction_type": "epsilon", "interpolation_type": "linear", "timestep_spacing": "leading", "steps_offset": 1,
    "use_karras_sigmas": False,
}

SDXL_BASE: dict[str, dict[str, Any]] = {
    "unet": {
        "sample_size": 128, "in_channels": 4, "out_channels": 4, "layers_per_block": 2,
        "block_out_channels": [320, 640, 1280],
        "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
        "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
        "mid_block_type": "UNetMidBlock2DCrossAttn",
        "attention_head_dim": [5, 10, 20], "transformer_layers_per_block": [1, 2, 10],
        "cross_attention_dim": 2048, "use_linear_projection": True,
        "addition_embed_type": "text_time", "addition_embed_type_num_heads": 64, "addition_time_embed_dim": 256,
        "projection_class_embeddings_input_dim": 2816,  # 6 size/crop conditions x 256 + the 1,280 pooled text
        "act_fn": "silu", "norm_num_groups": 32, "norm_eps": 1e-5, "flip_sin_to_cos": True, "freq_shift": 0,
        "downsample_padding": 1, "mid_block_scale_factor": 1, "conv_in_kernel": 3, "conv_out_kernel": 3,
        "time_embedding_type": "positional", "resnet_time_scale_shift": "default",
    },
    "vae": {
        "sample_size": 512, "in_channels": 3, "out_channels": 3, "latent_channels": 4, "layers_per_block": 2,
        "block_out_channels": [128, 256, 512, 512],
        "down_block_types": ["DownEncoderBlock2D"] * 4, "up_block_types": ["UpDecoderBlock2D"] * 4,
        "act_fn": "silu", "norm_num_groups": 32, "scaling_factor": 0.13025, "force_upcast": False,
    },
    "text_encoder": {  # CLIP ViT-L/14's text tower
        "vocab_size": 49408, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
        "num_attention_heads": 12, "max_position_embeddings": 77, "hidden_act": "quick_gelu",
        "projection_dim": 768, "layer_norm_eps": 1e-5, "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1,
    },
    "text_encoder_2": {  # OpenCLIP ViT-bigG/14's text tower, with its projection
        "vocab_size": 49408, "hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
        "num_attention_heads": 20, "max_position_embeddings": 77, "hidden_act": "gelu",
        "projection_dim": 1280, "layer_norm_eps": 1e-5, "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1,
    },
    "scheduler": _EULER,
}

_TINY_TEXT = {"vocab_size": 1000, "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2,
              "num_attention_heads": 4, "max_position_embeddings": 77, "hidden_act": "gelu", "projection_dim": 32,
              "layer_norm_eps": 1e-5, "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1}
TINY: dict[str, dict[str, Any]] = {
    "unet": {
        "sample_size": 8, "in_channels": 4, "out_channels": 4, "layers_per_block": 1,
        "block_out_channels": [32, 64],
        "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D"],
        "up_block_types": ["CrossAttnUpBlock2D", "UpBlock2D"],
        "attention_head_dim": [2, 4], "transformer_layers_per_block": [1, 2],
        "cross_attention_dim": 64, "use_linear_projection": True,
        "addition_embed_type": "text_time", "addition_time_embed_dim": 8,
        "projection_class_embeddings_input_dim": 80,  # 6 x 8 + the 32 pooled text
        "norm_num_groups": 8,
    },
    "vae": {
        "sample_size": 64, "in_channels": 3, "out_channels": 3, "latent_channels": 4, "layers_per_block": 1,
        "block_out_channels": [8, 16],
        "down_block_types": ["DownEncoderBlock2D"] * 2, "up_block_types": ["UpDecoderBlock2D"] * 2,
        "norm_num_groups": 8, "scaling_factor": 0.13025, "force_upcast": False,
    },
    "text_encoder": _TINY_TEXT,
    "text_encoder_2": _TINY_TEXT,
    "scheduler": _EULER,
}

ARCHITECTURES = {"sdxl-base": SDXL_BASE, "tiny": TINY}


def _bytes_to_unicode() -> list[str]:
    """CLIP's (and GPT-2's) printable stand-ins for the 256 byte values, in their fixed order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            codes.append(256 + extra)
            extra += 1
    return [chr(c) for c in codes]


def local_clip_tokenizer(folder: Path, pad_token: str):
    """A CLIP tokenizer (the pipeline's class) over a byte-level vocabulary written to `folder`."""
    from transformers import CLIPTokenizer

    symbols = _bytes_to_unicode()
    vocab = {token: i for i, token in enumerate(symbols + [s + "</w>" for s in symbols])}
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer.from_pretrained(str(folder), model_max_length=77, pad_token=pad_token)


def random_pipeline(architecture: str, device: str, dtype):
    """The SDXL pipeline from `ARCHITECTURES[architecture]`, random weights, on `device` in `dtype`.

    Modules are created directly on the device (a 2.57B-parameter UNet initialised on the CPU takes
    minutes), in fp32 for the initialisers, then cast.
    """
    import torch
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    def cast(module):  # torch's own .to: diffusers' override warns about fp32 modules even when it has none
        return torch.nn.Module.to(module, dtype)

    shapes = ARCHITECTURES[architecture]
    with torch.device(device):
        unet = cast(UNet2DConditionModel(**shapes["unet"]))
        vae = cast(AutoencoderKL(**shapes["vae"]))
        text_encoder = cast(CLIPTextModel(CLIPTextConfig(**shapes["text_encoder"])))
        text_encoder_2 = cast(CLIPTextModelWithProjection(CLIPTextConfig(**shapes["text_encoder_2"])))
    vocab_dir = Path(tempfile.mkdtemp(prefix="gpubench-sdxl-vocab-"))
    return StableDiffusionXLPipeline(
        vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2,
        tokenizer=local_clip_tokenizer(vocab_dir / "tokenizer", pad_token="<|endoftext|>"),
        tokenizer_2=local_clip_tokenizer(vocab_dir / "tokenizer_2", pad_token="!"),  # as the real tokenizer_2
        unet=unet, scheduler=EulerDiscreteScheduler(**shapes["scheduler"]),
        force_zeros_for_empty_prompt=True, add_watermarker=False,
    )


def pretrained_pipeline(base_dir: str, vae_dir: str, device: str, dtype):
    """The study's loading code: the fp16-fix VAE into the base pipeline, fp16 variant, safetensors."""
    from diffusers import AutoencoderKL, StableDiffusionXLPipeline

    vae = AutoencoderKL.from_pretrained(vae_dir, torch_dtype=dtype)
    pipe = StableDiffusionXLPipeline.from_pretrained(base_dir, vae=vae, torch_dtype=dtype, variant="fp16",
                                                     use_safetensors=True)
    return pipe.to(device)
