//! What a host installs beside the binary, generated from the command
//! line's own definition so it never drifts from it: shell completions
//! (`leasehold completions bash|zsh|fish`) and man pages (`leasehold man`:
//! leasehold(1) on stdout, or with `--dir` one page per command).

use crate::error::CliError;
use crate::exit::Exit;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// `leasehold completions`
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

/// `leasehold man`
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write leasehold.1 and a leasehold-COMMAND.1 for each command into
    /// this directory instead of printing leasehold(1).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell`.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "leasehold", &mut script);
    print!("{}", String::from_utf8_lossy(&script));
    Ok(())
}

/// Prints leasehold(1), or writes every page into `args.dir`.
pub fn man(args: ManArgs, cli: clap::Command) -> Result<(), CliError> {
    let Some(dir) = args.dir else {
        print!("{}", String::from_utf8_lossy(&render(cli)?));
        return Ok(());
    };
    let mut pages = vec![("leasehold.1".to_owned(), cli.clone())];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("leasehold-{}", sub.get_name());
        pages.push((format!("{name}.1"), sub.clone().name(name)));
    }
    for (file, page) in pages {
        write(&dir.join(file), &render(page)?)?;
    }
    Ok(())
}

fn render(page: clap::Command) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| CliError::new(Exit::Other, format!("cannot render the man page: {e}")))?;
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes)
        .map_err(|e| CliError::new(Exit::Other, format!("cannot write {}: {e}", path.display())))
}
