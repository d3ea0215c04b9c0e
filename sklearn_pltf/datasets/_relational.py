"""Loaders of the binary relational tensors shipped with the package."""

from __future__ import annotations

from importlib import resources

import numpy as np
import sparse
from sklearn.utils import Bunch

__all__ = ["load_nations", "load_kinships", "load_umls", "load_kinships_attributes",
           "off_diagonal_mask"]

_PROVENANCE = """\
The {title} relational data set as used by Kemp et al. (2006, the infinite
relational model) and Nickel, Tresp & Kriegel (2011, RESCAL), in the triple
form distributed with PyKEEN 1.11.1 (MIT licence): the union of its train,
validation and test triples. The classic ``.mat`` version has {classic_more}
and {classic_ones} ones. Entry (a, b, r) is 1 when "a -r-> b" holds.

Shape {shape}, {ones} ones ({density:.2%} of the entries).

Published link prediction under 10-fold cross-validation over all entries
(zeros included), AUC-PR: RESCAL {rescal}, CP {cp} (Nickel et al. 2011).
"""

_DATASETS = {
    "nations": dict(title="Nations (Rummel's dimensionality of nations)", classic_ones="2,024",
                    classic_more="one more relation", rescal=0.84, cp=0.83),
    "kinships": dict(title="Alyawarra kinship (Denham)", classic_ones="10,790",
                     classic_more="one more relation", rescal=0.95, cp=0.94),
    "umls": dict(title="UMLS (the Unified Medical Language System's semantic network)",
                 classic_ones="6,752", classic_more="three more relations", rescal=0.98,
                 cp=0.95),
}


def off_diagonal_mask(shape):
    """True everywhere but the diagonal x(i, i, ...) of the first two axes.

    Nations, Kinships and UMLS hold no relation of an entity to itself, and
    :class:`~sklearn_pltf.BayesianRESCAL` does not model one: pass this as
    ``mask`` to every model being compared (and to
    :meth:`~sklearn_pltf.model_selection.EntryKFold.split`) so that all fit,
    and are scored on, the same entries.

    Parameters
    ----------
    shape : tuple of int
        The data's shape, (n_entities, n_entities, ...).

    Returns
    -------
    mask : ndarray of bool of shape ``shape``

    Examples
    --------
    >>> from sklearn_pltf.datasets import off_diagonal_mask
    >>> int(off_diagonal_mask((3, 3, 2)).sum())
    12
    """
    if len(shape) < 2 or shape[0] != shape[1]:
        raise ValueError(f"Expected a shape whose first two axes are equal, got {tuple(shape)}.")
    entities = ~np.eye(shape[0], dtype=bool)
    return np.broadcast_to(entities.reshape(entities.shape + (1,) * (len(shape) - 2)),
                           tuple(shape)).copy()


def _load(name, as_sparse):
    with resources.files(__package__).joinpath("data", f"{name}.npz").open("rb") as f:
        stored = np.load(f)
        coords, shape = stored["coords"], tuple(int(s) for s in stored["shape"])
        entities, relations = stored["entities"].tolist(), stored["relations"].tolist()
    ones = np.ones(coords.shape[0], dtype=np.int8)
    data = sparse.COO(coords.T.astype(np.intp), ones, shape=shape)
    if not as_sparse:
        data = data.todense()
    description = _PROVENANCE.format(
        shape=shape, ones=coords.shape[0], density=coords.shape[0] / np.prod(shape),
        **_DATASETS[name])
    return Bunch(data=data, entities=entities, relations=relations, DESCR=description)


def load_nations(*, as_sparse=False):
    """The Nations tensor: 14 countries x 14 countries x 55 relations, binary.

    Entry ``(a, b, r)`` is 1 when country ``a`` stands in relation ``r`` to
    country ``b`` (e.g. exports to, accuses, has an embassy in) in Rummel's
    dimensionality-of-nations data, 1,992 ones (18.5% dense).

    Parameters
    ----------
    as_sparse : bool, default=False
        Return a pydata ``sparse.COO`` array instead of a dense one.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data``, the int8 tensor of shape (14, 14, 55); ``entities`` and
        ``relations``, the names of the indices in order; ``DESCR``, where it
        comes from and the published link-prediction figures.

    Examples
    --------
    >>> from sklearn_pltf.datasets import load_nations
    >>> nations = load_nations()
    >>> nations.data.shape, int(nations.data.sum())
    ((14, 14, 55), 1992)
    >>> nations.entities[:3]
    ['brazil', 'burma', 'china']
    """
    return _load("nations", as_sparse)


def load_kinships(*, as_sparse=False):
    """The Alyawarra kinship tensor: 104 people x 104 people x 25 kin terms, binary.

    Entry ``(a, b, r)`` is 1 when person ``a`` calls person ``b`` by kin term
    ``r`` (Denham's Alyawarra data), 10,686 ones (3.95% dense).

    Parameters
    ----------
    as_sparse : bool, default=False
        Return a pydata ``sparse.COO`` array instead of a dense one.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data``, the int8 tensor of shape (104, 104, 25); ``entities`` and
        ``relations``, the names in index order; ``DESCR``, its provenance.

    Examples
    --------
    >>> from sklearn_pltf.datasets import load_kinships
    >>> kinships = load_kinships(as_sparse=True)
    >>> kinships.data.shape, kinships.data.nnz
    ((104, 104, 25), 10686)
    """
    return _load("kinships", as_sparse)



def load_umls(*, as_sparse=False):
    """The UMLS tensor: 135 concepts x 135 concepts x 46 relations, binary.

    Entry ``(a, b, r)`` is 1 when biomedical concept type ``a`` stands in
    relation ``r`` to concept type ``b`` in the semantic network of the
    Unified Medical Language System (e.g. a pharmacologic substance
    *treats* a disease or syndrome), 6,529 ones (0.78% dense).

    Parameters
    ----------
    as_sparse : bool, default=False
        Return a pydata ``sparse.COO`` array instead of a dense one.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data``, the int8 tensor of shape (135, 135, 46); ``entities`` and
        ``relations``, the names in index order; ``DESCR``, its provenance
        and the published link-prediction figures.

    Examples
    --------
    >>> from sklearn_pltf.datasets import load_umls
    >>> umls = load_umls(as_sparse=True)
    >>> umls.data.shape, umls.data.nnz
    ((135, 135, 46), 6529)
    >>> umls.relations[:3]
    ['adjacent_to', 'affects', 'analyzes']
    """
    return _load("umls", as_sparse)

_ATTRIBUTES_DESCR = """\
The classic Alyawarra kinship data of Denham as used by Kemp et al. (2006)
and Nickel, Tresp & Kriegel (2011), from the public repository
gzupanda/HRESCAL (data/alyawarradata.mat): 104 people x 104 people x 26 kin
terms, binary, 10,790 ones (entry (a, b, r) is 1 when person a calls person
b by term r), with 14 integer-coded attributes per person whose meanings
(sex, age group, kinship section and the like) the file does not record.
``attributes`` one-hot encodes the categorical columns among them, those
with 2 to 20 distinct codes ({n_columns} columns, {n_values} values); the
constant column and those coding identity (one code per person, or nearly)
are left out. The people are in the file's order, not that of
:func:`load_kinships`, which has 25 kin terms.
"""


def load_kinships_attributes():
    """The Alyawarra kinship tensor with attributes of each person, for
    relations coupled with attributes (:class:`~sklearn_pltf.CoupledPLTF`).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data``, the int8 tensor of shape (104, 104, 26); ``attributes``, a
        binary (104, n_values) matrix, each person's one-hot attribute values;
        ``attribute_names``, ``"column c = code v"`` per column of
        ``attributes``; ``codes``, the raw (104, 14) integer codes; ``DESCR``.

    Examples
    --------
    >>> from sklearn_pltf.datasets import load_kinships_attributes
    >>> kinships = load_kinships_attributes()
    >>> kinships.data.shape, int(kinships.data.sum()), kinships.attributes.shape[0]
    ((104, 104, 26), 10790, 104)
    """
    with resources.files(__package__).joinpath("data", "kinships_attributes.npz").open("rb") as f:
        stored = np.load(f)
        coords, shape = stored["coords"], tuple(int(s) for s in stored["shape"])
        codes = stored["features"].astype(np.int64)
    data = np.zeros(shape, dtype=np.int8)
    data[tuple(coords.T.astype(np.intp))] = 1
    blocks, names = [], []
    for column in range(codes.shape[1]):
        values = np.unique(codes[:, column])
        if 2 <= values.size <= 20:
            blocks.append(codes[:, column, None] == values[None, :])
            names += [f"column {column} = code {v}" for v in values]
    attributes = np.hstack(blocks).astype(np.int8)
    return Bunch(data=data, attributes=attributes, attribute_names=names, codes=codes,
                 DESCR=_ATTRIBUTES_DESCR.format(n_columns=len(blocks), n_values=len(names)))
