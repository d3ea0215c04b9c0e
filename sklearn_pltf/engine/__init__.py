"""The engine: model strings, observed data (dense, sparse, Dask, array API),
likelihoods, contractions and their compiled kernels. Pure math, no
scikit-learn; everything above it imports from here."""
