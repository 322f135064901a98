#!/bin/bash
# Llama 3 8B pretraining with Megatron-Bridge on 8 nodes of 8 H100: the recipe script loads its
# ConfigContainer, merges the dumped config megatron-bridge/llama3_8b.yaml over it (--config-file),
# then these dotlist overrides. The overrides are a first draft for 64 GPUs: more model parallelism
# and recompute than an 8B model needs, and no context parallelism.
export CUDA_DEVICE_MAX_CONNECTIONS=1

TP=4
torchrun --nnodes=8 --nproc_per_node=8 examples/recipes/llama/pretrain_llama3_8b.py \
    --config-file megatron-bridge/llama3_8b.yaml \
    model.tensor_model_parallel_size=$TP \
    model.pipeline_model_parallel_size=2 \
    model.context_parallel_size=1 \
    model.sequence_parallel=true \
    model.recompute_granularity=full \
    model.recompute_method=uniform \
    model.recompute_num_layers=1 \
    train.global_batch_size=512 \
    train.micro_batch_size=1
