"""A plain Hugging Face Trainer script with no deepum in it: what `deepum run` wraps in
tests/test_launcher_gpu.py. A tiny Llama-style model with random weights from a fixed seed trains on
random tokens for a few steps on one GPU.
Usage: hf_trainer.py OUT_JSON [STEPS] (writes a digest of the parameters, the losses and where it ran)."""
import hashlib
import json
import sys
import tempfile

import torch
import transformers

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
SEQ, SAMPLES = 128, 64


class RandomTokens(torch.utils.data.Dataset):
    """Random token sequences from a fixed seed; each is its own label (causal language modelling)."""

    def __init__(self, vocab: int):
        generator = torch.Generator().manual_seed(1)
        self.tokens = torch.randint(0, vocab, (SAMPLES, SEQ), generator=generator)

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"input_ids": self.tokens[index], "labels": self.tokens[index]}


config = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                                  vocab_size=1000, max_position_embeddings=SEQ, attn_implementation="eager")
transformers.set_seed(0)
model = transformers.LlamaForCausalLM(config)
args = transformers.TrainingArguments(
    output_dir=tempfile.mkdtemp(), max_steps=steps, per_device_train_batch_size=4, learning_rate=1e-3,
    lr_scheduler_type="constant", optim="adamw_torch", logging_steps=1, report_to=[], save_strategy="no",
    use_cpu=False, seed=0, data_seed=0, full_determinism=True, dataloader_num_workers=0, disable_tqdm=True)
trainer = transformers.Trainer(model=model, args=args, train_dataset=RandomTokens(config.vocab_size))
trainer.train()

digest = hashlib.sha256()
for name, parameter in sorted(trainer.model.named_parameters()):
    digest.update(name.encode())
    digest.update(parameter.detach().cpu().numpy().tobytes())
with open(out, "w") as f:
    json.dump({"digest": digest.hexdigest(),
               "losses": [row["loss"] for row in trainer.state.log_history if "loss" in row],
               "global_step": trainer.state.global_step,
               "n_gpu": args.n_gpu,
               "parameter_device": next(trainer.model.parameters()).device.type,
               "data_parallel": isinstance(trainer.model_wrapped, torch.nn.DataParallel)}, f)
