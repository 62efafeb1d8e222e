//! Where this process stands among the processes of one run: its rank, the number of ranks
//! and where rank 0 listens, read from the environment that a launcher sets.
//!
//! `diffuse launch` sets `DIFFUSE_RANK`, `DIFFUSE_RANKS` and `DIFFUSE_COORDINATOR`. Under
//! other launchers the rank and size come from their own variables (Open MPI's `mpirun`,
//! PMI-based launchers such as MPICH's, Slurm's `srun`); `DIFFUSE_COORDINATOR` must then be
//! given explicitly. With more than one rank, Legion runs as one node per process, connected
//! through Realm's UCX network, and the processes find each other through diffuse's TCP
//! bootstrap plugin (`bootstrap/diffuse_bootstrap.c`), whose heartbeats then fail the run when a
//! rank dies or stays silent for `DIFFUSE_RANK_TIMEOUT` seconds (default 60).

/// This process's place in a run of several processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// This process's rank, `0..ranks`.
    pub rank: usize,
    /// Number of processes in the run.
    pub ranks: usize,
    /// `host:port` where rank 0's bootstrap listens (`None` for a single process).
    pub coordinator: Option<String>,
}

/// The (rank, size) variable pairs launchers set, in the order they are consulted.
const RANK_VARIABLES: &[(&str, &str)] = &[
    ("DIFFUSE_RANK", "DIFFUSE_RANKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
];

impl Cluster {
    /// A run of one process.
    pub fn single() -> Self {
        Cluster {
            rank: 0,
            ranks: 1,
            coordinator: None,
        }
    }

    /// True when the run has more than one process.
    pub fn is_distributed(&self) -> bool {
        self.ranks > 1
    }

    /// This process's place, from the environment: a single process when no launcher
    /// variable is set; an error naming the variable when one is malformed or when several
    /// ranks have no coordinator.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`Cluster::from_env`], reading variables through `var`.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let Some((rank_name, size_name, rank, size)) = RANK_VARIABLES
            .iter()
            .find_map(|&(r, s)| Some((r, s, var(r)?, var(s)?)))
        else {
            return Ok(Cluster::single());
        };
        let parse = |name: &str, value: &str| {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{name}={value:?} is not a non-negative integer"))
        };
        let rank = parse(rank_name, &rank)?;
        let ranks = parse(size_name, &size)?;
        if ranks == 0 || rank >= ranks {
            return Err(format!(
                "{rank_name}={rank} is not a rank of a run of {size_name}={ranks} processes"
            ));
        }
        let coordinator = var("DIFFUSE_COORDINATOR").filter(|c| !c.is_empty());
        if ranks > 1 {
            match &coordinator {
                None => {
                    return Err(format!(
                        "{ranks} processes ({size_name}) but no DIFFUSE_COORDINATOR: set it to \
                         host:port where rank 0 can listen and every rank can reach it (`diffuse \
                         launch` sets it)"
                    ))
                }
                Some(c) if !valid_address(c) => {
                    return Err(format!(
                        "DIFFUSE_COORDINATOR={c:?} is not host:port with a port number"
                    ))
                }
                Some(_) => {}
            }
            // The bootstrap plugin reads these; checked here so that a typo is an error
            // naming it rather than the default taken silently.
            for (name, whole) in [
                ("DIFFUSE_BOOTSTRAP_TIMEOUT", true),
                ("DIFFUSE_RANK_TIMEOUT", false),
            ] {
                if let Some(value) = var(name).filter(|v| !v.is_empty()) {
                    if !valid_seconds(&value, whole) {
                        return Err(format!(
                            "{name}={value:?} is not a positive {} of seconds",
                            if whole { "whole number" } else { "number" }
                        ));
                    }
                }
            }
        }
        Ok(Cluster {
            rank,
            ranks,
            coordinator,
        })
    }

    /// The environment the bootstrap plugin reads (`DIFFUSE_RANK`, `DIFFUSE_RANKS`,
    /// `DIFFUSE_COORDINATOR`), whichever launcher variables this place came from.
    pub fn bootstrap_env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("DIFFUSE_RANK", self.rank.to_string()),
            ("DIFFUSE_RANKS", self.ranks.to_string()),
        ];
        if let Some(c) = &self.coordinator {
            env.push(("DIFFUSE_COORDINATOR", c.clone()));
        }
        env
    }
}

/// True for a positive number of seconds the bootstrap accepts (whole when `whole`; at most a
/// year).
fn valid_seconds(value: &str, whole: bool) -> bool {
    let number = if whole {
        value.parse::<u32>().ok().map(f64::from)
    } else {
        value.parse::<f64>().ok()
    };
    number.is_some_and(|s| s > 0.0 && s <= 365.0 * 86_400.0)
}

/// True for `host:port` with a non-empty host and a port number.
fn valid_address(address: &str) -> bool {
    address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(vars: &[(&str, &str)]) -> Result<Cluster, String> {
        Cluster::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn no_launcher_is_one_process() {
        assert_eq!(place(&[]), Ok(Cluster::single()));
    }

    #[test]
    fn launcher_variables_give_rank_size_and_coordinator() {
        let c = place(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("DIFFUSE_COORDINATOR", "node0:7300"),
        ])
        .unwrap();
        assert_eq!((c.rank, c.ranks), (1, 4));
        assert!(c.is_distributed());
        assert!(c
            .bootstrap_env()
            .contains(&("DIFFUSE_RANK", "1".to_string())));
        // diffuse's own variables win over a launcher's.
        let c = place(&[
            ("DIFFUSE_RANK", "0"),
            ("DIFFUSE_RANKS", "2"),
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "8"),
            ("DIFFUSE_COORDINATOR", "127.0.0.1:1"),
        ])
        .unwrap();
        assert_eq!((c.rank, c.ranks), (0, 2));
    }

    #[test]
    fn bad_places_are_named() {
        let e = place(&[("DIFFUSE_RANK", "2"), ("DIFFUSE_RANKS", "2")]).unwrap_err();
        assert!(e.contains("DIFFUSE_RANK=2"), "{e}");
        let e = place(&[("DIFFUSE_RANK", "x"), ("DIFFUSE_RANKS", "2")]).unwrap_err();
        assert!(e.contains("DIFFUSE_RANK=\"x\""), "{e}");
        let e = place(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")]).unwrap_err();
        assert!(e.contains("no DIFFUSE_COORDINATOR"), "{e}");
        let e = place(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("DIFFUSE_COORDINATOR", "node0"),
        ])
        .unwrap_err();
        assert!(e.contains("host:port"), "{e}");
        let ranks = |name: &'static str, value: &'static str| {
            place(&[
                ("DIFFUSE_RANK", "0"),
                ("DIFFUSE_RANKS", "2"),
                ("DIFFUSE_COORDINATOR", "127.0.0.1:1"),
                (name, value),
            ])
        };
        for (name, value) in [
            ("DIFFUSE_RANK_TIMEOUT", "0"),
            ("DIFFUSE_RANK_TIMEOUT", "3s"),
            ("DIFFUSE_RANK_TIMEOUT", "NaN"),
            ("DIFFUSE_BOOTSTRAP_TIMEOUT", "2.5"),
            ("DIFFUSE_BOOTSTRAP_TIMEOUT", "-1"),
        ] {
            let e = ranks(name, value).unwrap_err();
            assert!(e.contains(&format!("{name}={value:?}")), "{e}");
        }
        assert!(ranks("DIFFUSE_RANK_TIMEOUT", "2.5").is_ok());
        assert!(ranks("DIFFUSE_BOOTSTRAP_TIMEOUT", "30").is_ok());
    }
}
