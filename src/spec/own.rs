//! A team's own numbers in a sweep file: `[calibration]` (the global factors, in the format of
//! `racksweep validate --calibration`), `[[gpu]]` tables that extend a GPU preset (`extends`,
//! replacing some of its fields, in place under its own id) and `[[price]]` quotes (a
//! provider's price per GPU-hour for one GPU at one pricing). Each is applied to the sweep's
//! catalog and recorded there (`Catalog::overrides`, `Catalog::quotes`) for `check`, the
//! manifest and the `provider` column. Formulas that use them: docs/model.md, "Cost".

use toml::Spanned;

use crate::catalog::{Catalog, Extended, Gpu, Quote};
use crate::error::UserError;
use crate::limits::{cut_quotes, quoted};
use crate::vocab::{Pricing, Vocabulary};

use super::Loader;
use super::raw::{RawCost, RawPrice};

impl Loader<'_> {
    /// `[calibration]`: the global factors it sets replace the built-in ones.
    pub(super) fn calibration(
        &self,
        catalog: &mut Catalog,
        table: Option<Spanned<toml::Table>>,
    ) -> Result<(), UserError> {
        let Some(table) = table else { return Ok(()) };
        let span = table.span();
        let changed = catalog.calibrate(table.into_inner()).map_err(|e| {
            self.at(span, format!("calibration: {}", cut_quotes(e.to_string().trim_end())))
                .with_hint(
                "keys of src/catalog/data/calibration.toml, and a [calibration.training] table of keys of training.toml",
            )
        })?;
        catalog.overrides.calibration = changed;
        Ok(())
    }

    /// One `[[gpu]]` table: a whole preset, or (with `extends`) the preset it names with the
    /// table's fields replacing its own, under the table's `id` or, without one, its own.
    /// Returns the preset and what it extends.
    pub(super) fn gpu_table(
        &self,
        catalog: &Catalog,
        i: usize,
        table: Spanned<toml::Table>,
    ) -> Result<(Gpu, Option<Extended>), UserError> {
        let span = table.span();
        let mut table = table.into_inner();
        let Some(extends) = table.remove("extends") else {
            let gpu = toml::Value::Table(table).try_into::<Gpu>().map_err(|e| {
                self.at(
                    span,
                    format!("gpu[{i}]: {}", cut_quotes(e.message().trim_end())),
                )
            })?;
            return Ok((gpu, None));
        };
        let toml::Value::String(base) = extends else {
            return Err(self
                .at(
                    span,
                    format!(
                        "gpu[{i}].extends: {} is not a GPU id",
                        cut_quotes(&extends.to_string())
                    ),
                )
                .with_hint("extends = \"h100-sxm\" (racksweep catalog gpus lists the ids)"));
        };
        let Some(b) = catalog.gpu_index(&base) else {
            let ids = catalog.gpus.iter().map(|g| g.id.as_str());
            let hint = match crate::suggest::did_you_mean(&base, ids) {
                Some(s) => format!("{s} `racksweep catalog gpus` lists them"),
                None => "`racksweep catalog gpus` lists them".to_string(),
            };
            return Err(self
                .at(
                    span,
                    format!("gpu[{i}].extends: unknown GPU \"{}\"", quoted(&base)),
                )
                .with_hint(hint));
        };
        let (gpu, keys) = catalog.extend_gpu(b, table).map_err(|e| {
            let e = e.to_string();
            self.at(
                span,
                format!(
                    "gpu[{i}] (extends \"{}\"): {}",
                    quoted(&base),
                    cut_quotes(e.trim_end())
                ),
            )
            .with_hint("extends takes the keys of a [[gpu]] table; docs/sweep-format.md")
        })?;
        let keys = keys.into_iter().filter(|k| k != "id").collect();
        let extended = Extended {
            id: gpu.id.clone(),
            extends: base,
            keys,
        };
        Ok((gpu, Some(extended)))
    }

    /// `[[price]]`: each quote sets its GPU's price at its commitment. One quote per GPU and
    /// commitment, and none for a GPU whose on-demand price `[cost] usd_per_gpu_hour` sets.
    pub(super) fn quotes(
        &self,
        catalog: &mut Catalog,
        prices: Vec<Spanned<RawPrice>>,
        cost: &Option<RawCost>,
    ) -> Result<(), UserError> {
        for (i, table) in prices.into_iter().enumerate() {
            let span = table.span();
            let RawPrice {
                provider,
                gpu,
                usd_per_gpu_hour,
                commitment,
            } = table.into_inner();
            let key = |k: &str| format!("price[{i}].{k}");
            if provider.get_ref().trim().is_empty() {
                return Err(self
                    .at(provider.span(), format!("{}: empty", key("provider")))
                    .with_hint("name whose quote this is, e.g. provider = \"coreweave\""));
            }
            let ids: Vec<&str> = catalog.gpus.iter().map(|g| g.id.as_str()).collect();
            let g = catalog.gpu_index(gpu.get_ref()).ok_or_else(|| {
                self.unknown(&gpu, &key("gpu"), "GPU", ids, "racksweep catalog gpus")
            })?;
            let pricing = Pricing::parse(commitment.get_ref()).ok_or_else(|| {
                let words: Vec<&str> = Pricing::ALL.iter().map(|p| p.as_str()).collect();
                self.at(
                    commitment.span(),
                    format!(
                        "{}: unknown pricing \"{}\"",
                        key("commitment"),
                        quoted(commitment.get_ref())
                    ),
                )
                .with_hint(format!("use one of {}", words.join(", ")))
            })?;
            let usd = self.number(
                &usd_per_gpu_hour,
                &key("usd_per_gpu_hour"),
                |x| x > 0.0 && x.is_normal(),
                "must be positive",
            )?;
            let id = &catalog.gpus[g].id;
            if let Some(q) = catalog
                .quotes
                .iter()
                .position(|q| q.gpu == g && q.pricing == pricing)
            {
                return Err(self
                    .at(
                        span,
                        format!(
                            "price[{i}]: a second quote for {id} at {} (price[{q}] is {}'s)",
                            pricing.as_str(),
                            catalog.quotes[q].provider
                        ),
                    )
                    .with_hint(
                        "one quote per GPU and commitment: compare providers in separate sweeps",
                    ));
            }
            let by_cost = cost
                .as_ref()
                .and_then(|c| c.usd_per_gpu_hour.as_ref())
                .is_some_and(|m| m.get_ref().contains_key(id));
            if pricing == Pricing::OnDemand && by_cost {
                return Err(self
                    .at(
                        span,
                        format!("price[{i}]: {id}'s on-demand price is also set by cost.usd_per_gpu_hour"),
                    )
                    .with_hint("keep one of the two"));
            }
            *catalog.gpus[g].usd_per_gpu_hour_at_mut(pricing) = Some(usd);
            catalog.quotes.push(Quote {
                provider: provider.into_inner(),
                gpu: g,
                pricing,
                usd_per_gpu_hour: usd,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::perf::{Estimate, evaluate};
    use crate::spec::{DEFAULT_MAX_CONFIGS, Spec, parse};
    use crate::vocab::{Payment, Pricing};

    /// One DGX H100 rack (32 GPUs) serving llama-3.1-8b at tp 8, with `extra` appended to
    /// `[grid]` (or after it).
    fn sweep(extra: &str) -> Spec {
        let text = format!(
            "[sweep]\nname = \"t\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 1024\noutput_tokens = 256\n[grid]\nhardware = [\"h100-sxm\"]\ntp = [8]\nbatch = [64]\n{extra}\n"
        );
        parse(Path::new("t.toml"), &text, DEFAULT_MAX_CONFIGS)
            .unwrap()
            .into_inference()
            .unwrap()
    }

    /// Each point's payment and estimate, in grid order.
    fn rows(s: &Spec) -> Vec<(Payment, Estimate)> {
        let ctx = s.context();
        (0..s.grid.len())
            .map(|i| {
                let p = s.grid.point(i);
                (s.grid.ownership[p.ownership as usize], evaluate(&ctx, &p))
            })
            .collect()
    }

    /// The pricing axis by hand, on one rack of 32 H100s at the catalog's prices
    /// (data/gpus.toml): on demand 32 x $2.99 = $95.68/h, reserved one year 32 x $1.87 =
    /// $59.84/h, three years 32 x $1.35 = $43.20/h, spot 32 x $1.79 = $57.28/h times the standby
    /// of instances of one server reclaimed every 3 h and back after 8 min (economics.toml):
    /// 1 + 8 / 60 / 3 = 1.0444, $59.83/h. Owned once, whatever the pricings: five rows per
    /// layout, not eight. Pricing changes the cost and nothing else.
    #[test]
    fn each_pricing_prices_the_rack_by_hand() {
        let s = sweep(
            "ownership = [\"cloud\", \"owned\"]\npricing = [\"on-demand\", \"reserved-1y\", \"reserved-3y\", \"spot\"]",
        );
        let rows = rows(&s);
        assert_eq!(rows.len(), 5);
        let owned = rows.iter().filter(|(p, _)| *p == Payment::Owned).count();
        assert_eq!(owned, 1);
        let spot: f64 = 32.0 * 1.79 * (1.0 + 8.0 / 60.0 / 3.0);
        let expected = [
            (Payment::Cloud(Pricing::OnDemand), 95.68),
            (Payment::Cloud(Pricing::Reserved1y), 59.84),
            (Payment::Cloud(Pricing::Reserved3y), 43.20),
            (Payment::Cloud(Pricing::Spot), spot),
        ];
        assert!((spot - 59.825_777_8).abs() < 1e-6);
        for ((payment, e), (want, usd)) in rows.iter().zip(expected) {
            assert_eq!(*payment, want);
            assert!(e.feasible(), "{e:?}");
            assert_eq!(e.gpus, 32);
            assert!((e.usd_per_hour_gpus - usd).abs() < 1e-9, "{want:?}: {e:?}");
            assert_eq!(
                e.usd_per_hour, e.usd_per_hour_gpus,
                "{want:?}: GPU-hours only"
            );
            assert!((e.usd_per_month - 730.0 * usd).abs() < 1e-6);
            // Everything but the price is the on-demand row's.
            let od = &rows[0].1;
            assert_eq!(e.tokens_per_s_per_gpu, od.tokens_per_s_per_gpu);
            assert_eq!(e.power_kw, od.power_kw);
            let mtok = usd / (e.output_tokens_per_month / 730.0 / 3600.0 * 3600.0) * 1e6;
            assert!((e.usd_per_mtok - mtok).abs() < 1e-9 * mtok);
        }
        let labels = crate::spec::Sweep::Inference(Box::new(s.clone())).labels();
        assert_eq!(
            labels.pricing_key,
            [Some(0), Some(1), Some(2), Some(3), None]
        );
        assert_eq!(labels.ownership, ["cloud", "owned"]);
        assert_eq!(labels.ownership_key, [0, 0, 0, 0, 1]);
        assert_eq!(labels.provider_key, [None; 5]);
    }

    /// Spot standby grows with the servers an instance spans: tp 8 x pp 2 spans two 8-GPU
    /// servers, reclaimed twice as often: 1 + 2 x 8 / 60 / 3 = 1.0889, 32 x $1.79 x 1.0889.
    #[test]
    fn spot_standby_counts_the_servers_of_an_instance() {
        let s = sweep("pp = [2]\npricing = [\"spot\"]");
        let e = &rows(&s)[0].1;
        assert!(e.feasible(), "{e:?}");
        assert_eq!(e.gpus_per_instance, 16);
        let usd = 32.0 * 1.79 * (1.0 + 2.0 * 8.0 / 60.0 / 3.0);
        assert!((e.usd_per_hour_gpus - usd).abs() < 1e-9, "{e:?}");
    }

    /// A `[[price]]` quote replaces the catalog's price at its commitment and names its
    /// provider on those rows only: 32 x $1.10 = $35.20/h at three years.
    #[test]
    fn a_quote_reaches_its_rows() {
        let s = sweep(
            "pricing = [\"on-demand\", \"reserved-3y\"]\n[[price]]\nprovider = \"coreweave\"\ngpu = \"h100-sxm\"\nusd_per_gpu_hour = 1.10\ncommitment = \"reserved-3y\"",
        );
        let rows = rows(&s);
        assert!((rows[0].1.usd_per_hour_gpus - 95.68).abs() < 1e-9);
        assert!((rows[1].1.usd_per_hour_gpus - 35.20).abs() < 1e-9);
        let labels = crate::spec::Sweep::Inference(Box::new(s.clone())).labels();
        assert_eq!(labels.provider, ["coreweave"]);
        assert_eq!(labels.provider_key, [None, Some(0)]);
        assert_eq!(
            s.header.catalog.own_numbers(),
            ["price: h100-sxm reserved-3y at 1.1 USD/GPU-h, quoted by coreweave"]
        );
    }

    /// llama-3.1-70b at tp 8, batch 1 on the H800, which has no measured kernel surfaces: its
    /// decode step is the roofline plus `step_overhead_ms` (perf::tests, "by hand"), so a
    /// `[calibration]` of 1 ms instead of the built-in 4 ms takes exactly 3 ms off TPOT. An
    /// H800 extended with half its HBM efficiency halves the HBM-bound rate and leaves the
    /// compute-bound one.
    #[test]
    fn calibration_and_extends_change_the_rows_they_should() {
        let h800 = |extra: &str| {
            let text = format!(
                "[sweep]\nname = \"t\"\n[workload]\nmodel = \"llama-3.1-70b\"\ninput_tokens = 1024\noutput_tokens = 1024\n[grid]\nhardware = [\"h800-sxm\"]\ntp = [8]\nbatch = [1]\n{extra}\n"
            );
            let s = parse(Path::new("t.toml"), &text, DEFAULT_MAX_CONFIGS)
                .unwrap()
                .into_inference()
                .unwrap();
            let e = rows(&s).remove(0).1;
            assert!(e.feasible(), "{e:?}");
            (s, e)
        };
        let (built_in, base) = h800("");
        assert_eq!(built_in.header.catalog.calibration.step_overhead_ms, 4.0);
        let (s, calibrated) = h800("[calibration]\nstep_overhead_ms = 1");
        assert!(
            (base.tpot_ms - calibrated.tpot_ms - 3.0).abs() < 1e-9,
            "{} {}",
            base.tpot_ms,
            calibrated.tpot_ms
        );
        assert_eq!(
            s.header.catalog.own_numbers(),
            ["calibration: step_overhead_ms = 1 (built-in 4)"]
        );

        let hbm = built_in
            .header
            .catalog
            .gpu("h800-sxm")
            .unwrap()
            .efficiency
            .hbm;
        let (s, extended) = h800(&format!(
            "[[gpu]]\nid = \"h800-sxm\"\nextends = \"h800-sxm\"\nefficiency = {{ hbm = {} }}",
            hbm / 2.0
        ));
        let ratio = extended.hbm_bound_tokens_per_s_per_gpu / base.hbm_bound_tokens_per_s_per_gpu;
        assert!((ratio - 0.5).abs() < 1e-12, "{ratio}");
        assert_eq!(
            extended.compute_bound_tokens_per_s_per_gpu,
            base.compute_bound_tokens_per_s_per_gpu
        );
        assert!(extended.tpot_ms > base.tpot_ms);
        // Extended in place: the same id, the other efficiencies kept, one preset of that id.
        let c = &s.header.catalog;
        let g = c.gpu("h800-sxm").unwrap();
        assert_eq!(g.efficiency.hbm, hbm / 2.0);
        assert_eq!(
            g.efficiency.gemm_bf16,
            built_in
                .header
                .catalog
                .gpu("h800-sxm")
                .unwrap()
                .efficiency
                .gemm_bf16
        );
        assert_eq!(c.gpus.iter().filter(|g| g.id == "h800-sxm").count(), 1);
        assert_eq!(
            c.own_numbers(),
            ["gpu h800-sxm: extends h800-sxm, sets efficiency.hbm"]
        );
    }

    /// A training sweep takes `[calibration.training]` as its factors, and the workload's
    /// restart time over both; `check`'s line names each factor with its built-in value.
    #[test]
    fn a_training_sweep_takes_its_calibration() {
        let base = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs/training-small.toml"),
        )
        .unwrap();
        let load = |text: &str| match parse(Path::new("t.toml"), text, DEFAULT_MAX_CONFIGS) {
            Ok(crate::spec::Sweep::Training(s)) => s,
            other => panic!("{other:?}"),
        };
        let built_in = load(&base);
        let text = format!("{base}\n[calibration.training]\ngemm_efficiency = 0.5\n");
        let s = load(&text);
        assert_eq!(s.factors.gemm_efficiency, 0.5);
        assert_eq!(s.factors.tp_comm_overlap, built_in.factors.tp_comm_overlap);
        assert_eq!(
            s.header.catalog.own_numbers(),
            [format!(
                "calibration: training.gemm_efficiency = 0.5 (built-in {})",
                built_in.factors.gemm_efficiency
            )]
        );
    }
}
