"""Confusion matrices of class maps and the per-class metrics read from them.

One concept: a class map (label raster or categorised polygons) scored against a reference
class map. Class codes of any kind (0, 255, 1.5, "forest") are looked up in a ``ClassTable``
that maps them to matrix positions 0..K-1. The matrix has K + 2 rows and K columns:

    rows    = prediction: the K classes, then OTHER (a predicted value that is not a known
              class) and NO_PREDICTION (prediction nodata on a valid reference pixel);
    columns = reference: the K classes.

Reference pixels that are nodata or void (ignore values) are never entered. Counts are int64
(no overflow past 2**31 pixels); areas are float64 m².

Per class k, with M the matrix: TP = M[k, k], FP = row sum - TP (predicted k, reference
another class), FN = column sum - TP (reference k, predicted another class, OTHER or
NO_PREDICTION). A class with TP + FP + FN = 0 is absent from both maps: its IoU is 0/0, it is
reported as absent and left out of the mean, never counted as 0 or 1.

Sources: Everingham et al. (2010), "The PASCAL Visual Object Classes (VOC) Challenge", IJCV
88, §4.2 (per-class IoU, void pixels excluded); Long, Shelhamer & Darrell (2015), "Fully
Convolutional Networks for Semantic Segmentation", CVPR, §5 (pixel accuracy, mean IU,
frequency weighted IU); Story & Congalton (1986), "Accuracy assessment: a user's
perspective", PE&RS 52(3) (user's and producer's accuracy); Dice (1945), Ecology 26(3);
the IoU article, "Intersection over Union" (formulas, the 0/0 trap, Dice = 2 IoU / (1 + IoU)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..util.rates import safe_divide

#: Labels of the two extra prediction rows.
OTHER = "other"
NO_PREDICTION = "no prediction"
#: The orientation of every matrix this module builds, stated in every report.
ORIENTATION = "rows = prediction, columns = reference"

#: Integer dtypes up to this many bytes are looked up through a dense table over all codes.
_DENSE_LOOKUP_BYTES = 2


@dataclass
class ClassTable:
    """Class codes and names; the position of a code is its matrix row and column.

    Attributes:
        values: list (K,) of class codes (numbers or text), in matrix order.
        names: list (K,) of class names ("" when none is known).
        fixed: True when the classes come from a class table the user gave: predicted codes
            not in it go to OTHER. False: every code met in either map becomes a class.
    """

    values: list = field(default_factory=list)
    names: list = field(default_factory=list)
    fixed: bool = False

    def __post_init__(self):
        if len(self.names) != len(self.values):
            self.names = list(self.names) + [""] * (len(self.values) - len(self.names))
        if len(set(self.values)) != len(self.values):
            raise ValueError("class values must be unique")
        self._position = {value: k for k, value in enumerate(self.values)}

    @property
    def k(self) -> int:
        return len(self.values)

    def position(self, value) -> int | None:
        """Matrix position of a class code, None when it is not a class."""
        return self._position.get(value)

    def find(self, value, dtype) -> int | None:
        """Matrix position of the class ``value`` as an array of ``dtype`` (numpy dtype or
        name) stores it (``lookup``'s rule: a Float32 raster's 0.1 is the class 0.1), None
        when it is not a class or ``dtype`` cannot hold it."""
        dtype = np.dtype(dtype)
        if dtype.kind in "iub" and not float(value).is_integer():
            return None
        try:
            code = np.asarray([value]).astype(dtype, casting="unsafe")
        except (OverflowError, ValueError):
            return None
        if dtype.kind in "iub" and float(code[0]) != float(value):
            return None
        k = int(self.lookup(code, -1)[0])
        return k if k >= 0 else None

    def add(self, values) -> list:
        """Append the codes not known yet (in the order given); returns the new ones."""
        new = [v for v in values if v not in self._position]
        for value in new:
            self._position[value] = len(self.values)
            self.values.append(value)
            self.names.append("")
        return new

    def lookup(self, codes: np.ndarray, missing: int) -> np.ndarray:
        """Matrix positions of numeric codes, ``missing`` for codes that are not classes.

        ``codes``: numeric array of any shape. Returns an int32 array of the same shape.
        Integer codes of at most 16 bits go through a dense table (one ``np.take``); others
        through a sorted search.
        """
        codes = np.asarray(codes)
        numeric = [(v, k) for k, v in enumerate(self.values) if _is_number(v)]
        if codes.dtype.kind in "iub" and codes.dtype.itemsize <= _DENSE_LOOKUP_BYTES:
            info = np.iinfo(codes.dtype) if codes.dtype.kind != "b" else None
            low = int(info.min) if info else 0
            size = (int(info.max) - low + 1) if info else 2
            table = np.full(size, missing, dtype=np.int32)
            for value, k in numeric:
                if float(value).is_integer() and 0 <= int(value) - low < size:
                    table[int(value) - low] = k
            index = codes.astype(np.int32) - low if low else codes
            return table[index]  # fancy indexing: twice as fast as np.take here
        if not numeric:
            return np.full(codes.shape, missing, dtype=np.int32)
        keys, positions = _keys_at_precision(numeric, codes.dtype)
        flat = codes.reshape(-1)
        if codes.dtype.kind != "f":
            flat = flat.astype(np.float64, copy=False)
        at = np.clip(np.searchsorted(keys, flat), 0, len(keys) - 1)
        out = np.where(keys[at] == flat, positions[at], missing).astype(np.int32)
        return out.reshape(codes.shape)


def _keys_at_precision(numeric, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class codes as the codes' own type stores them, and their matrix positions.

    Float codes are compared at the precision of the array that holds them: the class 0.1
    is the Float32 pixel 0.1 (stored as 0.10000000149011612). Two classes that one precision
    cannot tell apart (0.1 and 0.10000000149011612 in a Float32 array) take the class whose
    value is that stored number's shortest decimal form (``unique_codes``' spelling), else
    the first one.
    """
    if dtype.kind == "f" and dtype.itemsize < 8:
        chosen = {}
        for value, k in numeric:
            stored = dtype.type(value)
            canonical = float(str(stored)) == float(value)
            if stored not in chosen or (canonical and not chosen[stored][1]):
                chosen[stored] = (k, canonical)
        keys = np.array(sorted(chosen), dtype=dtype)
        positions = np.array([chosen[key][0] for key in keys.tolist()], dtype=np.int32)
        return keys, positions
    keys = np.array([v for v, _ in numeric], dtype=np.float64)
    order = np.argsort(keys, kind="stable")
    return keys[order], np.array([k for _, k in numeric], np.int32)[order]


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, bool
    )


def unique_codes(codes: np.ndarray) -> list:
    """The distinct codes of a numeric array, as Python numbers in increasing order.

    Integers of at most 16 bits are counted with ``np.bincount`` (no sort); other arrays use
    ``np.unique``. NaN is not a code. Floats are spelt at their own precision
    (``plain_code``: a Float32 0.1 is 0.1).
    """
    codes = np.asarray(codes).reshape(-1)
    if len(codes) == 0:
        return []
    if codes.dtype.kind in "iu" and codes.dtype.itemsize <= _DENSE_LOOKUP_BYTES:
        low = int(codes.min())
        present = np.flatnonzero(np.bincount((codes.astype(np.int32) - low)))
        return [int(v) + low for v in present]
    values = np.unique(codes)
    if values.dtype.kind == "f":
        values = values[~np.isnan(values)]
        return [plain_code(v) for v in values]
    return [int(v) for v in values]


def plain_code(value):
    """A class code as a Python number, spelt at the precision of its type: int when
    integral, else the shortest decimal that the type reads back as the same number
    (np.float32(0.1) is 0.1, not 0.10000000149011612)."""
    if isinstance(value, (np.floating, float)):
        number = float(value)
        if not np.isfinite(number) or number.is_integer():
            return int(number) if np.isfinite(number) else number
        return float(str(value)) if isinstance(value, np.floating) else number
    return int(value)


def new_matrix(k: int, dtype=np.int64) -> np.ndarray:
    """An empty (K + 2, K) matrix: rows prediction (+ OTHER, NO_PREDICTION), columns
    reference."""
    return np.zeros((k + 2, k), dtype=dtype)


def grow(matrix: np.ndarray, k: int) -> np.ndarray:
    """The matrix padded to K classes (new classes appended before OTHER/NO_PREDICTION)."""
    old = matrix.shape[1]
    if k == old:
        return matrix
    out = new_matrix(k, matrix.dtype)
    out[:old, :old] = matrix[:old]
    out[k:, :old] = matrix[old:]
    return out


def accumulate(matrix: np.ndarray, predicted: np.ndarray, reference: np.ndarray,
               weights=None) -> None:
    """Add pixels to a confusion matrix, in place.

    Args:
        matrix: int64 (counts) or float64 (areas) array, shape (K + 2, K).
        predicted: int array of prediction rows, in 0..K+1 (K = OTHER, K + 1 = NO_PREDICTION).
        reference: int array of reference columns, in 0..K-1, same shape as ``predicted``.
            Only valid reference pixels are passed.
        weights: optional float array of the same shape (each pixel's area in m²).

    Raises ValueError when the shapes differ.
    """
    predicted, reference = np.asarray(predicted), np.asarray(reference)
    if predicted.shape != reference.shape:
        raise ValueError(f"predicted {predicted.shape} and reference {reference.shape} differ")
    k = matrix.shape[1]
    key = predicted.reshape(-1).astype(np.int64) * k + reference.reshape(-1)
    counts = np.bincount(
        key, weights=None if weights is None else np.asarray(weights).reshape(-1),
        minlength=matrix.size,
    )
    matrix += counts.reshape(matrix.shape).astype(matrix.dtype, copy=False)


def confusion_matrix(predicted, reference, classes: ClassTable,
                     predicted_valid=None) -> np.ndarray:
    """The int64 confusion matrix of two label arrays (for small inputs and tests).

    Args:
        predicted, reference: numeric arrays of the same shape, class codes. Every reference
            element is entered (drop void ones before calling).
        classes: ClassTable; codes not in it are added unless ``classes.fixed``, in which
            case a predicted unknown code goes to OTHER (an unknown reference code is a
            programmer error: ValueError).
        predicted_valid: optional boolean array, False where the prediction is nodata (NO
            PREDICTION row).

    Returns int64 array (K + 2, K), rows = prediction, columns = reference.
    """
    predicted, reference = np.asarray(predicted), np.asarray(reference)
    if not classes.fixed:
        classes.add(unique_codes(reference))
        valid_predicted = predicted if predicted_valid is None else predicted[predicted_valid]
        classes.add(unique_codes(valid_predicted))
    k = classes.k
    ref_index = classes.lookup(reference, -1)
    if (ref_index < 0).any():
        raise ValueError("a reference code is not in the class table")
    pred_index = classes.lookup(predicted, k)
    if predicted_valid is not None:
        pred_index = np.where(predicted_valid, pred_index, k + 1)
    matrix = new_matrix(k)
    accumulate(matrix, pred_index, ref_index)
    return matrix


def class_metrics(matrix: np.ndarray) -> dict:
    """Per-class and summary metrics of a confusion matrix.

    Args:
        matrix: array (K + 2, K) of pixel counts or areas, rows = prediction (K classes, OTHER,
            NO_PREDICTION), columns = reference.

    Returns a dict of float arrays of shape (K,): ``tp``, ``fp``, ``fn`` (in the matrix's
    units), ``iou`` = TP / (TP + FP + FN), ``dice`` = 2 TP / (2 TP + FP + FN) (F1),
    ``precision`` = TP / (TP + FP) (user's accuracy), ``recall`` = TP / (TP + FN) (producer's
    accuracy), ``reference_total`` and ``predicted_total`` (column and row sums), boolean
    ``present`` (TP + FP + FN > 0); and floats:

    - ``miou``: mean IoU over present classes (NaN when none is present);
    - ``fwiou``: Σ_k (reference_total_k / Σ reference_total) · IoU_k (Long et al. 2015);
    - ``pixel_accuracy``: Σ TP / Σ matrix (OTHER and NO_PREDICTION pixels count as wrong);
    - ``miou_absent_as_zero``: Σ present IoU / K, the value of scikit-learn's
      ``jaccard_score(y_true, y_pred, labels=<all K classes>, average="macro",
      zero_division=0)`` and of torchmetrics' ``MeanIoU(num_classes=K)`` (up to 1.8) on the
      whole map as one sample;
    - ``n_present``, ``n_classes``.

    A ratio whose denominator is 0 is NaN: precision of a class never predicted, recall of a
    class absent from the reference, every ratio of an absent class.

    Sources: see the module docstring (Everingham et al. 2010; Long et al. 2015; Story &
    Congalton 1986).
    """
    m = np.asarray(matrix, dtype=np.float64)
    k = m.shape[1]
    if m.shape != (k + 2, k):
        raise ValueError(f"a (K + 2, K) matrix is needed, got shape {m.shape}")
    tp = np.diagonal(m[:k]).copy()
    predicted_total = m[:k].sum(axis=1)
    reference_total = m.sum(axis=0)
    fp = predicted_total - tp
    fn = reference_total - tp
    union = tp + fp + fn
    present = union > 0
    iou = safe_divide(tp, union, zero_division=np.nan)
    total = m.sum()
    n_present = int(present.sum())
    reference_sum = reference_total.sum()
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "iou": iou,
        "dice": safe_divide(2 * tp, 2 * tp + fp + fn, zero_division=np.nan),
        "precision": safe_divide(tp, tp + fp, zero_division=np.nan),
        "recall": safe_divide(tp, tp + fn, zero_division=np.nan),
        "reference_total": reference_total,
        "predicted_total": predicted_total,
        "present": present,
        "miou": float(iou[present].mean()) if n_present else float("nan"),
        "fwiou": float(safe_divide((reference_total * np.nan_to_num(iou)).sum(), reference_sum,
                                   zero_division=np.nan)),
        "pixel_accuracy": float(safe_divide(tp.sum(), total, zero_division=np.nan)),
        "miou_absent_as_zero": float(safe_divide(np.nan_to_num(iou).sum(), k,
                                                 zero_division=np.nan)),
        "n_present": n_present,
        "n_classes": k,
    }


def normalised(matrix: np.ndarray, axis: int) -> np.ndarray:
    """Row- (axis=1) or column-normalised (axis=0) shares of a matrix; NaN for empty lines."""
    m = np.asarray(matrix, dtype=np.float64)
    return safe_divide(m, m.sum(axis=axis, keepdims=True), zero_division=np.nan)


def conventions(metrics: dict) -> dict:
    """How other tools would summarise the same matrix, so users can reconcile numbers.

    ``metrics``: the result of ``class_metrics``. Returns a JSON-ready dict with the rule
    used here and the means under scikit-learn's and torchmetrics' conventions.
    """
    return {
        "rule": (
            "mIoU is the mean over classes present in either map (TP + FP + FN > 0); a class "
            "absent from both is reported as absent and left out, never counted as 0 or 1"
        ),
        "miou": metrics["miou"],
        "n_classes_in_mean": metrics["n_present"],
        "n_classes": metrics["n_classes"],
        "scikit_learn": {
            "miou": metrics["miou_absent_as_zero"],
            "call": "jaccard_score(reference, prediction, labels=<all classes>, "
                    "average='macro', zero_division=0)",
            "note": "a class absent from both maps counts as 0; without labels=, "
                    "scikit-learn averages over the values present in either array, which "
                    "is this report's mIoU when every predicted value is a class",
        },
        "torchmetrics": {
            "miou": metrics["miou_absent_as_zero"],
            "call": "MeanIoU(num_classes=K, input_format='index') on the whole map as one "
                    "sample",
            "note": "absent classes score 0 (up to 1.8; 1.9 marks them -1); fed tiles, it "
                    "averages the per-tile means, which depends on the tiling and is not "
                    "the map's mIoU",
        },
    }
