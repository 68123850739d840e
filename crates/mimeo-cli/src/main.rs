//! `mimeo`: the command. Parses arguments, runs the engine, renders events, picks the exit code.

use mimeo_cli::config::{Config, ConfigError};
use mimeo_cli::{EXIT_FAILED, args, config, exit_code, output, progress, signals, usage_status};
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    // First of all, so that a signal at any later moment is a clean stop.
    let control = Arc::new(mimeo::Control::new());
    let stopped = Arc::new(signals::Stopped::default());
    if let Err(e) = signals::install(control.clone(), stopped.clone()) {
        output::error(&format!("cannot install signal handlers: {e}"));
    }
    let args = match args::parse(output::prog(), std::env::args_os().collect()) {
        Ok(a) => a,
        Err(args::Stop::Display(help)) => {
            let _ = help.print();
            return ExitCode::SUCCESS;
        }
        Err(args::Stop::Usage(message)) => {
            output::usage_error(&message);
            return ExitCode::from(usage_status());
        }
    };
    if let Some(what) = &args.generate {
        return generate(what);
    }
    for warning in config::warnings(&args) {
        output::error(&warning);
    }
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(ConfigError::Usage(u)) => {
            output::usage_error(&u.0);
            return ExitCode::from(usage_status());
        }
        Err(ConfigError::Fatal(f)) => {
            output::error(&f.0);
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let printer = output::Printer {
        verbose: config.verbose,
        debug: config.debug,
        json: config.json,
        force: config.options.force,
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
    ExitCode::from(exit_code(&summary, &stopped))
}

/// `--generate man|bash|zsh|fish|elvish`: the man page or a completion script on stdout.
fn generate(what: &str) -> ExitCode {
    use std::io::Write;
    let mut cmd = args::command("mimeo");
    let mut text = Vec::new();
    let shell = match what {
        "man" => None,
        "bash" => Some(clap_complete::Shell::Bash),
        "zsh" => Some(clap_complete::Shell::Zsh),
        "fish" => Some(clap_complete::Shell::Fish),
        "elvish" => Some(clap_complete::Shell::Elvish),
        other => {
            output::usage_error(&format!(
                "cannot generate '{other}': use man, bash, zsh, fish or elvish"
            ));
            return ExitCode::from(usage_status());
        }
    };
    match shell {
        Some(shell) => clap_complete::generate(shell, &mut cmd, "mimeo", &mut text),
        None => clap_mangen::Man::new(cmd)
            .render(&mut text)
            .expect("rendering into memory cannot fail"),
    }
    match std::io::stdout().lock().write_all(&text) {
        // A reader that stops early (`| head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            output::error(&e.to_string());
            ExitCode::from(EXIT_FAILED)
        }
        _ => ExitCode::SUCCESS,
    }
}
