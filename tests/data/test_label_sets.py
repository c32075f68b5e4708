import numpy as np
import pytest

from lttw.data.label_sets import (
    indicator_matrix,
    is_multi_label,
    label_counts,
    label_lists,
    label_targets,
)


def test_indicator_matrix_round_trips_label_lists():
    lists = [[0, 2], [1], [0, 1, 2]]
    matrix = indicator_matrix(lists, 3)
    assert matrix.dtype == np.uint8
    assert matrix.tolist() == [[1, 0, 1], [0, 1, 0], [1, 1, 1]]
    assert label_lists(matrix) == lists


def test_out_of_range_ids_are_refused_with_the_row():
    with pytest.raises(ValueError, match="row 1"):
        indicator_matrix([[0], [3]], 3)


def test_label_targets_and_counts_of_both_forms():
    single = label_targets(np.array([2, 0, 2]), 3, multi_label=False)
    assert single.dtype == np.int64 and single.flags.writeable
    assert label_counts(single, 3).tolist() == [1, 0, 2]
    multi = label_targets([[0, 1], [1]], 3, multi_label=True)
    assert multi.shape == (2, 3)
    assert label_counts(multi, 3).tolist() == [1, 2, 0]


def test_multi_label_flag():
    assert not is_multi_label({"classes": ["a"]})
    assert is_multi_label({"classes": ["a"], "multi_label": True})
