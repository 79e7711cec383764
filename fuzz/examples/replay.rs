//! Run Lua input `index` of `seed` on a fresh node and print both replies.
use locklab_core::server::{Node, Profile};
fn main() {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().expect("seed").parse().expect("seed");
    let index: u64 = args.next().expect("index").parse().expect("index");
    let input = locklab_fuzz::input(locklab_fuzz::FuzzTarget::Lua, seed, index);
    let mut node = Node::new(Profile::V7_0);
    let c = node.connect();
    let r = node.execute(
        c,
        &[b"EVAL".to_vec(), input, b"1".to_vec(), b"k".to_vec(), b"1".to_vec()],
    );
    println!("{r:?}");
    for _ in 0..3 {
        println!(
            "{:?}",
            node.execute(c, &[b"EVAL".to_vec(), b"return 1".to_vec(), b"0".to_vec()])
        );
    }
}
