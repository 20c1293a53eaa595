//! Encoders run over a batch's rows in groups of similar length, each group cut to its own
//! longest row ([`by_length`]): a batch of short and long texts is no longer padded whole to
//! its longest. Each row's output is the one it has in the whole batch (padding is masked), so
//! losses and gradients are those of the whole batch, whatever the loss compares.

use tch::Tensor;

use crate::data::EncodedRows;
use crate::Result;

/// What one more forward is taken to cost on the CPU, in padded tokens: the per-call work of
/// every layer (dispatch, thread wake-ups, smaller products) against the work of a token. Not
/// tuned: with it, MiniLM fine-tuning on short mixed passages gains 10 % steps/s
/// (benchmarks/text-ranking-ab.sh).
const CPU_GROUP_TOKENS: usize = 96;

/// The rows of `lengths` (real tokens per row) in groups that minimise the padded tokens plus
/// `group_tokens` per group: rows by increasing length, cut where a cut saves more padding than
/// a forward costs. One group holding every row when nothing is worth a cut.
pub fn length_groups(lengths: &[usize], group_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let n = order.len();
    // best[j]: the least cost of the first j rows (in `order`), cut[j]: where its last group starts.
    let mut best = vec![0usize; n + 1];
    let mut cut = vec![0usize; n + 1];
    for j in 1..=n {
        let longest = lengths[order[j - 1]];
        let (start, cost) = (0..j)
            .map(|i| (i, best[i] + (j - i) * longest + group_tokens))
            .min_by_key(|&(_, cost)| cost)
            .unwrap_or((0, 0));
        best[j] = cost;
        cut[j] = start;
    }
    let mut groups = Vec::new();
    let mut end = n;
    while end > 0 {
        let start = cut[end];
        groups.push(order[start..end].to_vec());
        end = start;
    }
    groups.reverse();
    groups
}

/// `encode(rows)` (one output row per input row) computed a length group at a time (see
/// [`length_groups`]) and put back in the rows' order. Encoders on a GPU run the whole batch:
/// the cost of a forward there is another trade, not measured yet.
///
/// # Errors
/// What `encode` returns; a libtorch error.
pub fn by_length(
    rows: &EncodedRows,
    encode: impl Fn(&EncodedRows) -> Result<Tensor>,
) -> Result<Tensor> {
    if rows.ids.device() != tch::Device::Cpu || rows.ids.size().first().is_none_or(|&b| b < 2) {
        return encode(rows);
    }
    let lengths: Vec<usize> = Vec::<i64>::try_from(rows.lengths()?)?
        .into_iter()
        .map(|l| l.max(0) as usize)
        .collect();
    let groups = length_groups(&lengths, CPU_GROUP_TOKENS);
    if groups.len() < 2 {
        return encode(rows);
    }
    let mut outputs = Vec::with_capacity(groups.len());
    let mut position = vec![0i64; lengths.len()];
    let mut next = 0;
    for group in &groups {
        let index: Vec<i64> = group.iter().map(|&r| r as i64).collect();
        outputs.push(encode(&rows.select(&Tensor::f_from_slice(&index)?)?)?);
        for &r in group {
            position[r] = next;
            next += 1;
        }
    }
    Ok(Tensor::f_cat(&outputs, 0)?.f_index_select(0, &Tensor::f_from_slice(&position)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn rows_are_cut_into_groups_where_the_padding_saved_pays_for_a_forward() {
        // Equal lengths, or a saving below the cost of a forward: one group.
        assert_eq!(length_groups(&[5, 5, 5], 10), vec![vec![0, 1, 2]]);
        assert_eq!(length_groups(&[10, 12, 11], 10), vec![vec![0, 2, 1]]);
        // Four short rows and two long ones: 4 × 90 tokens of padding saved for one forward.
        assert_eq!(
            length_groups(&[100, 8, 10, 9, 100, 7], 50),
            vec![vec![5, 1, 3, 2], vec![0, 4]]
        );
        // Free forwards: a group per length.
        assert_eq!(
            length_groups(&[3, 1, 3, 2], 0),
            vec![vec![1], vec![3], vec![0, 2]]
        );
        assert_eq!(length_groups(&[], 10), Vec::<Vec<usize>>::new());
    }

    /// Rows of the given lengths (ids 1..=length), padded with 0 to the longest.
    fn rows(lengths: &[i64]) -> EncodedRows {
        let width = *lengths.iter().max().unwrap();
        let mut ids = Vec::new();
        let mut mask = Vec::new();
        for &l in lengths {
            for t in 0..width {
                ids.push(if t < l { t + 1 } else { 0 });
                mask.push(i64::from(t < l));
            }
        }
        let shape = [lengths.len() as i64, width];
        let ids = Tensor::f_from_slice(&ids).unwrap().f_view(shape).unwrap();
        EncodedRows {
            type_ids: ids.f_zeros_like().unwrap(),
            mask: Tensor::f_from_slice(&mask).unwrap().f_view(shape).unwrap(),
            ids,
            pad_id: 0,
        }
    }

    #[test]
    fn each_group_is_cut_to_its_longest_and_outputs_come_back_in_the_rows_order() {
        let lengths = [200, 3, 190, 4, 2, 205];
        let widths = std::cell::RefCell::new(Vec::new());
        let out = by_length(&rows(&lengths), |r| {
            widths.borrow_mut().push(r.ids.size());
            // A row's output: its token count and the sum of its ids.
            Ok(Tensor::f_stack(
                &[
                    r.mask
                        .f_sum_dim_intlist([1i64].as_slice(), false, Kind::Float)?,
                    r.ids
                        .f_sum_dim_intlist([1i64].as_slice(), false, Kind::Float)?,
                ],
                1,
            )?)
        })
        .unwrap();
        assert_eq!(*widths.borrow(), vec![vec![3, 4], vec![3, 205]]);
        let out = Vec::<Vec<f32>>::try_from(out).unwrap();
        for (row, &l) in out.iter().zip(&lengths) {
            assert_eq!(row, &vec![l as f32, (l * (l + 1) / 2) as f32]);
        }
    }
}
