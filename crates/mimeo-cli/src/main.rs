//! `mimeo`: the command. Parses arguments, runs the engine, renders events, picks the exit code.

use mimeo_cli::config::{Config, ConfigError};
use mimeo_cli::family::{self, Page};
use mimeo_cli::{EXIT_FAILED, EXIT_USAGE, args, config, exit_code, output, progress};
use std::process::ExitCode;

/// What the man page says beyond the options.
const PAGE: Page = Page {
    usages: &[
        "[OPTION]... [-T] SOURCE DEST",
        "[OPTION]... SOURCE... DIRECTORY",
        "[OPTION]... -t DIRECTORY SOURCE...",
    ],
    exit_status: &[
        ("0", "Everything was copied."),
        (
            "1",
            "Some entry failed (each failure is reported), or standard output could not be written.",
        ),
        ("2", "The command line was wrong."),
        ("24", "Only sources that vanished during the run failed."),
        (
            "128+N",
            "Stopped by signal N: 130 for SIGINT, 143 for SIGTERM, 141 when the reader of standard output went away.",
        ),
    ],
    examples: &[
        (
            "-a src dst",
            "Copy the tree src to dst, keeping everything cp -a keeps; files are cloned where the filesystem can share extents.",
        ),
        (
            "-r --progress src dst",
            "Copy a tree with a progress line on stderr.",
        ),
        (
            "-v a b dir",
            "Copy a and b into dir, naming each copy as cp -v does.",
        ),
        (
            "-au --partial big.img /backup/",
            "Copy what changed; after an interrupted run, resume the large files where they stopped.",
        ),
        (
            "--json -r src dst",
            "Copy a tree, with JSON Lines of errors and a final summary on stdout.",
        ),
        ("--generate man > mimeo.1", "Write this man page."),
    ],
};

fn main() -> ExitCode {
    let family::Started { control, stopped } = family::start(output::prog());
    let argv: Vec<_> = std::env::args_os().collect();
    let json = family::json_asked(&argv);
    let args = match args::parse(output::prog(), argv) {
        Ok(a) => a,
        Err(args::Stop::Display(help)) => {
            output::out(&help.render().to_string());
            return family::finish(0);
        }
        Err(args::Stop::Usage(message)) => return refuse(json, "usage", &message, EXIT_USAGE),
    };
    if let Some(what) = &args.generate {
        return family::generate(args::command(output::prog()), &PAGE, what);
    }
    for warning in config::warnings(&args) {
        output::error(&warning);
    }
    let json = args.json;
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(ConfigError::Usage(u)) => return refuse(json, "usage", &u.0, EXIT_USAGE),
        Err(ConfigError::Fatal(f)) => return refuse(json, "target", &f.0, EXIT_FAILED),
    };
    let printer = output::Printer {
        verbose: config.verbose,
        debug: config.debug,
        json: config.json,
        force: config.options.force || config.options.remove_destination,
        looks: output::Looks::new(&config.options),
    };
    let summary = if config.dry_run {
        mimeo::dry_run(&config.pairs, &config.options, &printer)
    } else {
        let bar = config.progress.then(|| {
            progress::Progress::start(
                &config.pairs,
                &config.options,
                control.clone(),
                config.options.sync,
            )
        });
        let summary = mimeo::copy_with(&config.pairs, &config.options, &printer, &control);
        if let Some(bar) = bar {
            bar.finish();
        }
        summary
    };
    if config.json {
        output::out(&output::summary_json(&summary));
    } else if config.stats {
        output::out(&output::summary_text(&summary));
    }
    family::finish(exit_code(&summary, &stopped))
}

/// A run refused before it started: the message on stderr (usage errors with cp's hint),
/// and with `--json` an error object and a summary on stdout. `operation` names what was
/// wrong in the error object: `usage` or `target`.
fn refuse(json: bool, operation: &str, message: &str, code: u8) -> ExitCode {
    if json {
        let mut summary = mimeo::Summary::default();
        summary.errors = 1;
        output::out(&output::error_object(operation, message));
        output::out(&output::summary_json(&summary));
    }
    if code == EXIT_USAGE {
        family::usage(message)
    } else {
        output::error(message);
        family::finish(code)
    }
}
