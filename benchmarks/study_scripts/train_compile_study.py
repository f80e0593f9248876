# The torch.compile training study's script, verbatim from the post (shared/seeds/runcrate-posts.txt).
# Kept as the reference that `gpubench run train-compile` is checked against on a GPU.
import json, sys, time, torch
from transformers import LlamaConfig, LlamaForCausalLM
mode, attn = sys.argv[1], sys.argv[2]          # eager|compile, sdpa|eager
B, S = 4, 2048
cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                  num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=S,
                  attn_implementation=attn)
model = LlamaForCausalLM(cfg).to("cuda", dtype=torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
fwd = torch.compile(model) if mode == "compile" else model
x = torch.randint(0, 32000, (B, S), device="cuda")
def step():
    loss = fwd(input_ids=x, labels=x).loss
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
t0 = time.time(); step(); torch.cuda.synchronize(); first = time.time() - t0
for _ in range(4): step()
torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
t0 = time.time()
for _ in range(20): step()
torch.cuda.synchronize(); dt = (time.time() - t0) / 20
print(json.dumps({"mode": mode, "attn": attn, "first_step_s": first, "step_ms": dt * 1000,
                  "tokens_per_s": B * S / dt, "peak_gb": torch.cuda.max_memory_allocated() / 1e9}))
