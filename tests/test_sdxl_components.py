"""The random-weights pipeline has SDXL base's real shapes, and its prompts take the pipeline's 77-token path."""

import pytest

from gpubench.workloads.sdxl.components import SDXL_BASE, local_clip_tokenizer

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")


def params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_component_configs_have_sdxl_base_parameter_counts():
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        unet = diffusers.UNet2DConditionModel(**SDXL_BASE["unet"])
        vae = diffusers.AutoencoderKL(**SDXL_BASE["vae"])
        clip_l = transformers.CLIPTextModel(transformers.CLIPTextConfig(**SDXL_BASE["text_encoder"]))
        clip_g = transformers.CLIPTextModelWithProjection(transformers.CLIPTextConfig(**SDXL_BASE["text_encoder_2"]))
    # the released checkpoints' counts: UNet 2,567,463,684; VAE 83,653,863; CLIP-L 123,060,480; CLIP-bigG 694,659,840
    assert (params(unet), params(vae), params(clip_l), params(clip_g)) == (
        2_567_463_684, 83_653_863, 123_060_480, 694_659_840)
    assert not vae.config.force_upcast  # the fp16-fix VAE decodes in fp16, unlike the base model's own VAE


def test_local_tokenizer_fills_the_77_slots_within_the_encoders_vocabulary(tmp_path):
    prompt = "a photo of an astronaut riding a horse on a beach at sunset, detailed, 35mm"
    for name, pad in (("tokenizer", "<|endoftext|>"), ("tokenizer_2", "!")):
        tokenizer = local_clip_tokenizer(tmp_path / name, pad_token=pad)
        # the pipeline's own call (encode_prompt)
        ids = tokenizer(prompt, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
                        return_tensors="pt").input_ids
        assert ids.shape == (1, 77)
        assert ids[0, 0] == tokenizer.bos_token_id and tokenizer.eos_token_id in ids[0].tolist()
        assert ids.max() < SDXL_BASE["text_encoder"]["vocab_size"]
        assert tokenizer.decode(ids[0], skip_special_tokens=True).replace(" ", "") == prompt.replace(" ", "")
