# mk/model.mk: the Promela model of the lifecycle, checked with spin
# (docs/MODEL.md).
#
#   make model-check     spin -a, gcc pan, the safety, liveness and
#                        two-request verifications, and the mutants that
#                        must be rejected (in CHECK_EXTRA)
#   make model-findings  the runs that reproduce reported core behaviour
#                        (not a gate: each says whether it still reproduces)

MODEL_SRCS := $(wildcard model/*.pml model/mutants/*.pml model/findings/*.pml) \
              model/check.sh
MODEL_OUT  := $(BUILD)/model

.PHONY: model-check model-findings

model-check: $(MODEL_SRCS)
	@sh model/check.sh $(MODEL_OUT)/gate gate

model-findings: $(MODEL_SRCS)
	@sh model/check.sh $(MODEL_OUT)/findings findings

CHECK_EXTRA += model-check
