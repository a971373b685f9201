# Perturb-and-MAP (Hazan, Maji & Jaakkola, NIPS 2013), Figure 1 (three panels) and the extra
# marginal-error-vs-time figure. `make fig-perturb-map-1 SCALE=quick|paper` builds all four;
# Figure 2 needs hand-annotated images that are not public (see docs/perturb_map.md).
$(eval $(call figure_rule,fig-perturb-map-1-left,experiments/perturb_map/fig1_left.yaml))
$(eval $(call figure_rule,fig-perturb-map-1-middle,experiments/perturb_map/fig1_middle.yaml))
$(eval $(call figure_rule,fig-perturb-map-1-right,experiments/perturb_map/fig1_right.yaml))
$(eval $(call figure_rule,fig-perturb-map-marginal-vs-time,experiments/perturb_map/marginal_vs_time.yaml))

.PHONY: fig-perturb-map-1
fig-perturb-map-1: fig-perturb-map-1-left fig-perturb-map-1-middle fig-perturb-map-1-right fig-perturb-map-marginal-vs-time
