# SPDX-License-Identifier: MIT
"""SimpleTuner's text encoders: loaded onto the GPU to embed the prompts,
then "unloaded" (the trainer drops its reference and collects garbage),
while the prompt handler and the embedding cache still hold them, so they
stay resident through training. The model trained is loaded in a phase of
its own, and rightly outlives it.

    simpletuner.py STEPS"""
import gc
import sys

from common import batch, leakwatch, tt

STEPS = int(sys.argv[1])
ENCODER_FEATURES = 128 * 1024


class TextEncoder(tt.Module):
    def __init__(self):
        self.embeddings = tt.full(ENCODER_FEATURES, 0.01)
        self.projection = tt.full(ENCODER_FEATURES, 0.02)

    def forward(self, tokens):
        return tokens * self.embeddings + self.projection


class PromptHandler(object):
    def __init__(self, text_encoders):
        self.text_encoders = text_encoders


class EmbedCache(object):
    def __init__(self, text_encoder):
        self.text_encoder = text_encoder
        self.embeds = {}

    def encode(self, prompt, tokens):
        with tt.no_grad():
            self.embeds[prompt] = self.text_encoder(tokens).sum()
        return self.embeds[prompt]


def main():
    with leakwatch.phase("load model"):
        model = tt.Linear(1024).to("cuda")
    opt = tt.SGD(model.parameters(), lr=0.01)
    with leakwatch.phase("encode prompts"):
        text_encoder = TextEncoder().to("cuda")  # @load
        handler = PromptHandler([text_encoder])
        cache = EmbedCache(text_encoder)
        for i, prompt in enumerate(["a cat", "a dog", "a boat"]):
            cache.encode(prompt, tt.full(ENCODER_FEATURES, float(i)))
        # "Unload" the encoder: the handler and the cache still hold it.
        del text_encoder
        gc.collect()
    for step in range(STEPS):
        y = model(batch(step))
        loss = (y * y).sum() + cache.embeds["a cat"]
        loss.backward()
        opt.step()
        opt.zero_grad()
        leakwatch.step()
    return handler, cache


kept = main()
print("ok", STEPS)
