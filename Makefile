# The pipeline's usual runs as thin calls of the `llm_nb` command (`make -n TARGET` prints what a target runs).
# Stages whose code, config and files are unchanged are skipped; add FORCE=--force to run them anyway.
#   make all CONFIG=my.yaml             every stage
#   make data-clean                     raw files → cleaned table (synth, ingest, clean)
#   make train-eval                     model, tokenize, train, evaluate on the cleaned table
#   make deploy                         export (merge, GGUF, quantize), serve and benchmark
#   make debug-train                    a few training steps in the run folder `debug`, with the debug switches on
#   make dvc                            dvc.yaml + params.yaml for CONFIG (then `dvc repro`, `dvc push`)
#   make doctor | check | lineage FILE=runs/demo/export/...gguf | test
CONFIG ?= llm_nb/data/demo.yaml
LLM_NB ?= llm_nb
FORCE ?=
SET ?=
FILE ?=
DEBUG_STEPS ?= 5
RUN = $(LLM_NB) run $(CONFIG) $(FORCE) $(SET)

.PHONY: all data-clean train-eval deploy debug-train dvc doctor check lineage test

all:
	$(RUN)

data-clean:
	$(RUN) --stages synth,ingest,clean

train-eval:
	$(RUN) --stages model,tokenize,train,evaluate

deploy:
	$(RUN) --stages export,serve_bench

# the data stages and training only, a few steps, in its own run folder; CUDA errors raised where they happen,
# NCCL and torch.distributed telling what they do
debug-train:
	CUDA_LAUNCH_BLOCKING=1 NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL \
	$(RUN) --stages synth,ingest,clean,model,tokenize,train --set run.name=debug --set train.max_steps=$(DEBUG_STEPS)

dvc:
	$(LLM_NB) dvc $(CONFIG)

doctor:
	$(LLM_NB) doctor $(CONFIG)

check:
	$(LLM_NB) check $(CONFIG)

lineage:
	@test -n "$(FILE)" || { echo "make lineage FILE=<a file of a run folder>"; exit 2; }
	$(LLM_NB) lineage $(FILE)

test:
	bash tools/test.sh
