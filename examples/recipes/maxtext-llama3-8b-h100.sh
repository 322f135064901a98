#!/bin/bash
# Llama 3 8B pretraining with MaxText on 8 nodes of 8 H100: key=value overrides over MaxText's base.yml
# (maxtext/base.yml beside this script). A first draft for 64 GPUs: full rematerialisation, one sample per
# device, tensor parallelism 2 inside each node, FSDP over the rest (4 per node, 8 nodes across). The global
# batch is per_device_batch_size x 64 devices x gradient_accumulation_steps = 512 sequences of 8192 tokens;
# the mesh does not move it, the per-device batch and the accumulation do.
# XLA: overlap collectives with compute (latency-hiding scheduler), combine and pipeline them.
export XLA_FLAGS="--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_enable_triton_gemm=false --xla_gpu_enable_highest_priority_async_stream=true --xla_gpu_all_reduce_combine_threshold_bytes=1073741824 --xla_gpu_all_gather_combine_threshold_bytes=134217728 --xla_gpu_reduce_scatter_combine_threshold_bytes=67108864 --xla_gpu_enable_pipelined_all_gather=true --xla_gpu_enable_pipelined_reduce_scatter=true --xla_gpu_enable_while_loop_double_buffering=true"
export XLA_PYTHON_CLIENT_MEM_FRACTION=0.92
export NCCL_DEBUG=WARN

python3 -m maxtext.trainers.pre_train.train maxtext/base.yml \
    run_name=llama3-8b-h100 \
    base_output_directory=/fsx/maxtext \
    hardware=gpu \
    model_name=llama3-8b \
    tokenizer_type=huggingface \
    tokenizer_path=meta-llama/Meta-Llama-3-8B \
    dataset_type=hf \
    hf_path=allenai/c4 \
    hf_name=en \
    max_target_length=8192 \
    per_device_batch_size=1 \
    gradient_accumulation_steps=8 \
    remat_policy=full \
    attention=cudnn_flash_te \
    max_segments_per_seq=32 \
    ici_tensor_parallelism=2 \
    ici_fsdp_parallelism=-1 \
    dcn_data_parallelism=1 \
    dcn_fsdp_parallelism=-1 \
    learning_rate=3.e-4 \
    steps=5000 \
    enable_checkpointing=false
