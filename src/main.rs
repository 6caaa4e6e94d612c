//! The `archipelago` command-line tool.

fn main() {
    println!("archipelago: see `archipelago --help`");
}
