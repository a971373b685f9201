# Austerity MCMC (Korattikara, Chen & Welling 2014): `make fig-austerity-N [SCALE=quick|paper]`.
$(eval $(call figure_rule,fig-austerity-1,experiments/austerity/fig1.yaml))
$(eval $(call figure_rule,fig-austerity-2,experiments/austerity/fig2.yaml))
$(eval $(call figure_rule,fig-austerity-3,experiments/austerity/fig3.yaml))
$(eval $(call figure_rule,fig-austerity-4,experiments/austerity/fig4.yaml))
$(eval $(call figure_rule,fig-austerity-5,experiments/austerity/fig5.yaml))
$(eval $(call figure_rule,fig-austerity-6,experiments/austerity/fig6.yaml))
$(eval $(call figure_rule,fig-austerity-7,experiments/austerity/fig7.yaml))
$(eval $(call figure_rule,fig-austerity-8,experiments/austerity/fig8.yaml))
