# Rates-FPCD (Breuleux, Bengio & Vincent 2011): `make fig-rates-fpcd-N [SCALE=quick|paper]`.
$(eval $(call figure_rule,fig-rates-fpcd-1,experiments/rates_fpcd/fig1.yaml))
$(eval $(call figure_rule,fig-rates-fpcd-2,experiments/rates_fpcd/fig2.yaml))
$(eval $(call figure_rule,fig-rates-fpcd-3-left,experiments/rates_fpcd/fig3_left.yaml))
$(eval $(call figure_rule,fig-rates-fpcd-3-right,experiments/rates_fpcd/fig3_right.yaml))
$(eval $(call figure_rule,fig-rates-fpcd-bias,experiments/rates_fpcd/bias.yaml))
$(eval $(call figure_rule,fig-rates-fpcd-mnist-coverage,experiments/rates_fpcd/mnist_coverage.yaml))
.PHONY: fig-rates-fpcd-3
fig-rates-fpcd-3: fig-rates-fpcd-3-left fig-rates-fpcd-3-right
