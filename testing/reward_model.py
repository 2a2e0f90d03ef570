"""A tiny sequence-classification reward model built locally (no hub): Qwen2ForSequenceClassification
with one label on the tiny-calc tokenizer, its score head set so that the reward is high when the
last token is one chosen character (a real forward pass decides; nothing is stubbed)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "assets/models/tiny-calc"


def build_reward_model(folder: str | Path, good: str = "7") -> str:
    """Save a reward model that scores > 0 when the text holds the token ``good`` and < 0 otherwise: its
    one attention layer averages an indicator of ``good`` over the sequence (zero queries and keys give
    uniform causal attention) and the score head reads that average at the last token."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForSequenceClassification

    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        num_labels=1,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForSequenceClassification(cfg)
    good_id = tok(good, add_special_tokens=False)["input_ids"][-1]
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    with torch.no_grad():
        layer = model.model.layers[0]
        for proj in (
            layer.self_attn.q_proj,
            layer.self_attn.k_proj,
            layer.self_attn.v_proj,
            layer.self_attn.o_proj,
            layer.mlp.down_proj,
        ):
            proj.weight.zero_()
            if getattr(proj, "bias", None) is not None:
                proj.bias.zero_()
        layer.input_layernorm.weight.fill_(1.0)
        layer.post_attention_layernorm.weight.fill_(1.0)
        model.model.norm.weight.fill_(1.0)
        emb = model.model.embed_tokens.weight
        emb.normal_(0, 0.02)
        emb[:, 0] = 0.0  # dim 0: 1 for the good token only
        emb[good_id, 0] = 1.0
        emb[:, 1] = -0.05  # dim 1: a small negative baseline
        layer.self_attn.v_proj.weight[0, 0] = 1.0  # value = the indicator
        for head in range(cfg.num_attention_heads):  # the average goes into dim 1
            layer.self_attn.o_proj.weight[1, head * head_dim] = 1.0
        model.score.weight.zero_()
        model.score.weight[0, 1] = 1.0
    model.config.architectures = ["Qwen2ForSequenceClassification"]
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return str(folder)
