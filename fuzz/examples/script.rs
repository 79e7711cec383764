//! Print input `index` of `seed` of a target (default `lualib`): the script
//! a finding names, to run by hand against both servers.
fn main() {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().expect("seed").parse().expect("seed");
    let index: u64 = args.next().expect("index").parse().expect("index");
    let target = args.next().unwrap_or_else(|| "lualib".to_owned());
    let target = locklab_fuzz::FuzzTarget::parse(&target).expect("a target name");
    let input = locklab_fuzz::input(target, seed, index);
    println!("{}", String::from_utf8_lossy(&input));
}
