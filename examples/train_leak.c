/* SPDX-License-Identifier: MIT */
/*
 * A training-like loop with a planted leak, for the demo.
 *
 * Each step runs a forward and a backward pass whose activations and
 * gradients are freed again, an optimizer whose state is created once at the
 * first step (not a leak), and a "loss for logging" that is appended to a
 * list which is never drained: one small buffer leaks per step, the way a
 * list of device-side losses does when logging is switched off.
 *
 * Compiled against the real CUDA headers; it runs on a GPU with the real
 * runtime, or anywhere with the test suite's stand-in runtime.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include <leakwatch.h>

#define CHECK(call)                                                           \
	do {                                                                  \
		cudaError_t err_ = (call);                                    \
		if (err_ != cudaSuccess) {                                    \
			fprintf(stderr, "%s failed: %s\n", #call,             \
				cudaGetErrorString(err_));                    \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define LAYERS 4
#define MAX_STEPS 100000

static void *weights[LAYERS];
static void *optimizer_state[LAYERS];
static void *logged_losses[MAX_STEPS];
static int nlogged;

static void load_model(size_t layer_bytes)
{
	for (int i = 0; i < LAYERS; i++)
		CHECK(cudaMalloc(&weights[i], layer_bytes));
}

static void forward_backward(size_t activation_bytes, void **loss)
{
	void *activations[LAYERS], *grads[LAYERS];

	for (int i = 0; i < LAYERS; i++)
		CHECK(cudaMalloc(&activations[i], activation_bytes));
	CHECK(cudaMalloc(loss, 512));
	for (int i = LAYERS - 1; i >= 0; i--) {
		CHECK(cudaMalloc(&grads[i], activation_bytes));
		CHECK(cudaFree(activations[i]));
	}
	for (int i = 0; i < LAYERS; i++)
		CHECK(cudaFree(grads[i]));
}

static void optimizer_step(size_t layer_bytes)
{
	/* Lazily created state, like Adam's moments: born once, kept. */
	for (int i = 0; i < LAYERS; i++)
		if (!optimizer_state[i])
			CHECK(cudaMalloc(&optimizer_state[i], 2 * layer_bytes));
}

/* The planted leak: every step's loss is kept "for logging". */
static void record_loss_for_logging(void *loss)
{
	if (nlogged < MAX_STEPS)
		logged_losses[nlogged++] = loss;
}

static void train(int steps)
{
	size_t layer_bytes = 1 << 20, activation_bytes = 256 << 10;

	leakwatch_mark_phase_begin("load");
	load_model(layer_bytes);
	leakwatch_mark_phase_end();

	for (int step = 0; step < steps; step++) {
		void *loss;
		forward_backward(activation_bytes, &loss);
		optimizer_step(layer_bytes);
		record_loss_for_logging(loss);
		leakwatch_mark_step();
	}
	for (int i = 0; i < LAYERS; i++) {
		CHECK(cudaFree(weights[i]));
		CHECK(cudaFree(optimizer_state[i]));
	}
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 200;

	if (steps < 1 || steps > MAX_STEPS) {
		fprintf(stderr, "usage: %s [steps, 1..%d]\n", argv[0], MAX_STEPS);
		return 2;
	}
	train(steps);
	printf("trained %d steps\n", steps);
	return 0;
}
