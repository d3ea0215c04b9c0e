"""The relational family: a factor on both entity axes (RESCAL,
``"ia,jb,abk->ijk"`` with factor 1 tied to factor 0). Its VB and EM
(:mod:`.rescal`), Gibbs and SADA (:mod:`.rescal_gibbs`) and SGLD
(:mod:`.rescal_sgld`) kernels on the data's relational layout
(:mod:`._relational`), and the same kernels with other tensors sharing the
entity factor (:mod:`.coupled`). A family may use the generic algorithms
(:mod:`~sklearn_pltf.inference.vb`, :mod:`~sklearn_pltf.inference.em`);
they import no family."""
