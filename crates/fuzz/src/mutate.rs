//! Mutations of corpus inputs, from a seeded generator (xorshift64*), so a
//! run is replayed by its seed: a flipped bit, a byte set to a value that
//! sits at a boundary, a byte inserted or removed, a run cut out, copied,
//! or spliced in from another input, a varint made long.

/// Bytes at the edges of what decoders count: 0, 1, a varint's
/// continuation bit, the most a byte holds.
const EDGES: [u8; 6] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff];

/// Makes inputs from a corpus.
pub struct Mutator {
    state: u64,
}

impl Mutator {
    /// A mutator whose choices follow from `seed` (0 is taken as 1).
    pub fn new(seed: u64) -> Mutator {
        Mutator { state: seed.max(1) }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A corpus input (or nothing, if the corpus is empty) with one to
    /// eight mutations.
    pub fn next_input(&mut self, corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut input = match corpus.len() {
            0 => Vec::new(),
            n => corpus[self.below(n)].clone(),
        };
        for _ in 0..1 + self.below(8) {
            self.mutate(&mut input, corpus);
        }
        input
    }

    fn mutate(&mut self, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
        let at = self.below(input.len());
        match self.below(8) {
            0 if !input.is_empty() => input[at] ^= 1 << self.below(8),
            1 if !input.is_empty() => input[at] = EDGES[self.below(EDGES.len())],
            2 => input.insert(at.min(input.len()), self.next() as u8),
            3 if !input.is_empty() => {
                input.remove(at);
            }
            4 if !input.is_empty() => {
                let end = (at + 1 + self.below(32)).min(input.len());
                input.drain(at..end);
            }
            5 if !input.is_empty() => {
                let end = (at + 1 + self.below(32)).min(input.len());
                let run = input[at..end].to_vec();
                let to = self.below(input.len() + 1);
                input.splice(to..to, run);
            }
            6 if !corpus.is_empty() => {
                let other = &corpus[self.below(corpus.len())];
                let from = self.below(other.len());
                let end = (from + 1 + self.below(64)).min(other.len());
                let to = self.below(input.len() + 1);
                input.splice(to..to, other[from..end].iter().copied());
            }
            _ => {
                // A varint made as long as it may be: every byte continues.
                let to = self.below(input.len() + 1);
                let long = [0xff; 9].into_iter().chain([0x01]);
                input.splice(to..to, long);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_makes_the_same_inputs() {
        let corpus = vec![vec![1, 2, 3, 4], vec![9; 20]];
        let (mut a, mut b) = (Mutator::new(7), Mutator::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_input(&corpus), b.next_input(&corpus));
        }
        assert!(Mutator::new(1).next_input(&[]).len() <= 80);
    }
}
