//! Bytes moved between the nodes of a multi-process run, counted from a model of where each
//! store's valid copies are.
//!
//! Every launch and host copy of a control-replicated run updates the model: a point that
//! reads part of a store on a node holding no valid copy of that part needs those bytes moved
//! there (Legion copies them; the node then holds a valid copy too); a write leaves the only
//! valid copy on the writer's node; points on several nodes reducing into the same elements
//! send all but one node's contributions; a host read maps the whole range on every node
//! (every rank reads), a host write leaves a copy everywhere (every rank writes it). The model
//! counts element bytes only, not Legion's control messages. It runs in every process of a
//! replicated run on the same operations, so every rank reports the same count.

use diffuse_ir::{Rect, StoreId};
use hashbrown::HashMap;

/// Part of a store and the nodes holding a valid copy of it (bit `n` for node `n`).
#[derive(Clone, Copy, Debug)]
struct Piece {
    rect: Rect,
    nodes: u64,
}

/// The valid copies of every live store, and the bytes moved so far.
#[derive(Default)]
pub(crate) struct Traffic {
    stores: HashMap<StoreId, (usize, Vec<Piece>)>,
    moved: u64,
}

/// One access of a launch point: its node and the part of the store it touches.
pub(crate) struct Access {
    /// The node the point runs on.
    pub(crate) node: usize,
    /// The sub-store it reads, writes or reduces into.
    pub(crate) rect: Rect,
}

impl Traffic {
    /// Bytes moved between nodes so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved
    }

    /// A new store of `element` bytes per element whose contents (zeros or host data) every
    /// node holds.
    pub(crate) fn created(&mut self, store: StoreId, whole: Rect, element: usize, nodes: usize) {
        self.stores.insert(
            store,
            (
                element,
                vec![Piece {
                    rect: whole,
                    nodes: all(nodes),
                }],
            ),
        );
    }

    /// The store is gone.
    pub(crate) fn dropped(&mut self, store: StoreId) {
        self.stores.remove(&store);
    }

    /// Points read `accesses` of `store`: the parts their nodes lack are moved there.
    pub(crate) fn read(&mut self, store: StoreId, accesses: &[Access]) {
        let Some((element, pieces)) = self.stores.get_mut(&store) else {
            return;
        };
        for a in accesses.iter().filter(|a| !a.rect.is_empty()) {
            let bit = 1u64 << a.node.min(63);
            let mut next = Vec::with_capacity(pieces.len() + 4);
            for p in pieces.drain(..) {
                let inside = p.rect.intersect(&a.rect);
                if inside.is_empty() || p.nodes & bit != 0 {
                    next.push(p);
                    continue;
                }
                self.moved += inside.volume() as u64 * *element as u64;
                next.push(Piece {
                    rect: inside,
                    nodes: p.nodes | bit,
                });
                next.extend(subtract(&p.rect, &inside).into_iter().map(|rect| Piece {
                    rect,
                    nodes: p.nodes,
                }));
            }
            *pieces = next;
        }
    }

    /// Points wrote `accesses` of `store`: each part is valid only on its writer's node.
    pub(crate) fn write(&mut self, store: StoreId, accesses: &[Access]) {
        for a in accesses.iter().filter(|a| !a.rect.is_empty()) {
            self.only_on(store, a.rect, 1u64 << a.node.min(63));
        }
    }

    /// Points reduced into `accesses` of `store`: for each part, the contributions of every
    /// node but the lowest are sent to it, where the result is then valid.
    pub(crate) fn reduce(&mut self, store: StoreId, accesses: &[Access]) {
        let Some(&(element, _)) = self.stores.get(&store) else {
            return;
        };
        let mut targets: Vec<(Rect, u64)> = Vec::new();
        for a in accesses.iter().filter(|a| !a.rect.is_empty()) {
            let bit = 1u64 << a.node.min(63);
            match targets.iter_mut().find(|(r, _)| *r == a.rect) {
                Some((_, nodes)) => *nodes |= bit,
                None => targets.push((a.rect, bit)),
            }
        }
        for (rect, nodes) in targets {
            let senders = u64::from(nodes.count_ones().saturating_sub(1));
            self.moved += senders * rect.volume() as u64 * element as u64;
            self.only_on(store, rect, nodes & nodes.wrapping_neg());
        }
    }

    /// Every node maps `rect` of `store` on the host (a replicated host read).
    pub(crate) fn host_read(&mut self, store: StoreId, rect: Rect, nodes: usize) {
        let accesses: Vec<Access> = (0..nodes).map(|node| Access { node, rect }).collect();
        self.read(store, &accesses);
    }

    /// Every node wrote `rect` of `store` from the host (a replicated host write).
    pub(crate) fn host_write(&mut self, store: StoreId, rect: Rect, nodes: usize) {
        self.only_on(store, rect, all(nodes));
    }

    /// `rect` of `store` is valid exactly on the nodes of `mask`.
    fn only_on(&mut self, store: StoreId, rect: Rect, mask: u64) {
        let Some((_, pieces)) = self.stores.get_mut(&store) else {
            return;
        };
        let mut next = Vec::with_capacity(pieces.len() + 4);
        for p in pieces.drain(..) {
            if p.rect.intersect(&rect).is_empty() {
                next.push(p);
            } else {
                next.extend(subtract(&p.rect, &rect).into_iter().map(|r| Piece {
                    rect: r,
                    nodes: p.nodes,
                }));
            }
        }
        next.push(Piece { rect, nodes: mask });
        *pieces = next;
    }
}

/// The node mask of nodes `0..nodes`.
fn all(nodes: usize) -> u64 {
    if nodes >= 64 {
        u64::MAX
    } else {
        (1u64 << nodes) - 1
    }
}

/// `a` minus `b` as disjoint boxes (at most two per dimension).
fn subtract(a: &Rect, b: &Rect) -> Vec<Rect> {
    let cut = a.intersect(b);
    if cut.is_empty() {
        return vec![*a];
    }
    let mut out = Vec::new();
    let mut rest = *a;
    for d in 0..a.dims() {
        if rest.lo[d] < cut.lo[d] {
            let mut below = rest;
            below.hi.as_mut_slice()[d] = cut.lo[d];
            out.push(below);
            rest.lo.as_mut_slice()[d] = cut.lo[d];
        }
        if cut.hi[d] < rest.hi[d] {
            let mut above = rest;
            above.lo.as_mut_slice()[d] = cut.hi[d];
            out.push(above);
            rest.hi.as_mut_slice()[d] = cut.hi[d];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use diffuse_ir::Tuple;

    fn span(lo: i64, hi: i64) -> Rect {
        Rect {
            lo: Tuple::splat(1, lo),
            hi: Tuple::splat(1, hi),
        }
    }

    fn at(node: usize, lo: i64, hi: i64) -> Access {
        Access {
            node,
            rect: span(lo, hi),
        }
    }

    #[test]
    fn reads_move_what_a_node_lacks_once() {
        let s = StoreId(1);
        let mut t = Traffic::default();
        t.created(s, span(0, 100), 8, 2);
        t.read(s, &[at(0, 0, 50), at(1, 50, 100)]);
        assert_eq!(t.moved(), 0, "both nodes hold the initial data");
        t.write(s, &[at(0, 0, 50), at(1, 50, 100)]);
        // A halo of 10 elements each way.
        t.read(s, &[at(0, 0, 60), at(1, 40, 100)]);
        assert_eq!(t.moved(), 20 * 8);
        t.read(s, &[at(0, 0, 60), at(1, 40, 100)]);
        assert_eq!(t.moved(), 20 * 8, "valid copies are not moved again");
        // Replicating the whole store after new writes moves half of it each way.
        t.write(s, &[at(0, 0, 50), at(1, 50, 100)]);
        t.read(s, &[at(0, 0, 100), at(1, 0, 100)]);
        assert_eq!(t.moved(), 20 * 8 + 100 * 8);
    }

    #[test]
    fn reductions_send_all_but_one_nodes_contribution_and_host_reads_reach_every_node() {
        let s = StoreId(2);
        let mut t = Traffic::default();
        t.created(s, span(0, 1), 8, 2);
        t.reduce(s, &[at(0, 0, 1), at(0, 0, 1), at(1, 0, 1)]);
        assert_eq!(t.moved(), 8);
        t.host_read(s, span(0, 1), 2);
        assert_eq!(t.moved(), 16, "node 1 needs the result");
        t.host_write(s, span(0, 1), 2);
        t.host_read(s, span(0, 1), 2);
        assert_eq!(t.moved(), 16);
        t.dropped(s);
        t.read(s, &[at(1, 0, 1)]);
        assert_eq!(t.moved(), 16, "a dropped store is not tracked");
    }

    #[test]
    fn subtracting_boxes_leaves_disjoint_parts_of_the_right_volume() {
        let a = Rect {
            lo: Tuple::new(&[0, 0]).unwrap(),
            hi: Tuple::new(&[10, 10]).unwrap(),
        };
        let b = Rect {
            lo: Tuple::new(&[2, 3]).unwrap(),
            hi: Tuple::new(&[5, 20]).unwrap(),
        };
        let parts = subtract(&a, &b);
        let volume: i64 = parts.iter().map(Rect::volume).sum();
        assert_eq!(volume, 100 - 3 * 7);
        for (i, p) in parts.iter().enumerate() {
            assert!(p.intersect(&b).is_empty());
            for q in &parts[i + 1..] {
                assert!(p.intersect(q).is_empty());
            }
        }
    }
}
