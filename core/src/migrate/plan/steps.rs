//! A plan's steps held as runs, and the units cut from them as they are
//! needed: the plan of a fleet's version is the size of its files, not of
//! files × tenants.
//!
//! A run is one migration over consecutive schema indices (the planner
//! numbers a version's tenants in list order, so "file 3 in every tenant"
//! is one run). Step indices stay what they were — positions in execution
//! order — and are mapped to their run by a binary search. Units (one
//! transaction each) are generated one at a time from the runs
//! ([`Plan::units`]), so nothing per (tenant, file) is ever held; what has
//! committed is a bit per step ([`StepSet`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::migrate::plan::{Plan, Step};

/// One migration over `len` consecutive schemas from `schema`, as steps
/// `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u32,
    migration: u32,
    schema: u32,
    len: u32,
    execute: bool,
}

impl Run {
    fn step(&self, offset: u32) -> Step {
        Step { migration: self.migration, schema: self.schema + offset, execute: self.execute }
    }

    fn end(&self) -> u32 {
        self.start + self.len
    }
}

/// The steps of a plan, in execution order, held as runs (see the module
/// documentation). Built only by [`Steps::push`], so two equal sequences
/// are held alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steps {
    runs: Vec<Run>,
}

impl Steps {
    /// How many steps.
    pub fn len(&self) -> usize {
        self.runs.last().map_or(0, |run| run.end() as usize)
    }

    /// No step at all.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many runs hold them: the plan's size, which does not grow with
    /// the tenants when they all run the same files.
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Appends a step (extending the last run when it continues it).
    ///
    /// # Panics
    /// With more than `u32::MAX` steps (the planner refuses such a plan).
    pub fn push(&mut self, step: Step) {
        if let Some(last) = self.runs.last_mut()
            && last.migration == step.migration
            && last.execute == step.execute
            && last.schema.checked_add(last.len) == Some(step.schema)
        {
            last.len += 1;
            return;
        }
        let start = u32::try_from(self.len()).expect("a plan indexes its steps with u32");
        self.runs.push(Run { start, migration: step.migration, schema: step.schema, len: 1, execute: step.execute });
    }

    /// The step at `index`, if there is one.
    pub fn get(&self, index: u32) -> Option<Step> {
        let run = self.runs.partition_point(|run| run.end() <= index);
        self.runs.get(run).map(|run| run.step(index - run.start))
    }

    /// The step at `index`.
    ///
    /// # Panics
    /// When `index` is not a step of the plan.
    pub fn at(&self, index: u32) -> Step {
        self.get(index).unwrap_or_else(|| panic!("step {index} of a plan of {} steps", self.len()))
    }

    /// Every step, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { runs: &self.runs, offset: 0 }
    }

    /// Every step with its index, in order.
    pub fn indexed(&self) -> impl Iterator<Item = (u32, Step)> + '_ {
        self.runs.iter().flat_map(|run| (0..run.len).map(move |offset| (run.start + offset, run.step(offset))))
    }

    /// The runs whose steps lie in `steps` (a segment: its bounds are run
    /// bounds).
    fn runs_in(&self, steps: &Range<u32>) -> &[Run] {
        let first = self.runs.partition_point(|run| run.end() <= steps.start);
        let last = self.runs.partition_point(|run| run.start < steps.end);
        &self.runs[first..last.max(first)]
    }
}

/// The steps of a [`Steps`], in order.
pub struct Iter<'s> {
    runs: &'s [Run],
    offset: u32,
}

impl Iterator for Iter<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let run = self.runs.first()?;
        let step = run.step(self.offset);
        self.offset += 1;
        if self.offset == run.len {
            self.runs = &self.runs[1..];
            self.offset = 0;
        }
        Some(step)
    }
}

impl<'s> IntoIterator for &'s Steps {
    type Item = Step;
    type IntoIter = Iter<'s>;

    fn into_iter(self) -> Iter<'s> {
        self.iter()
    }
}

impl Extend<Step> for Steps {
    fn extend<I: IntoIterator<Item = Step>>(&mut self, steps: I) {
        for step in steps {
            self.push(step);
        }
    }
}

impl FromIterator<Step> for Steps {
    fn from_iter<I: IntoIterator<Item = Step>>(steps: I) -> Self {
        let mut all = Steps::default();
        all.extend(steps);
        all
    }
}

/// Step indices as a bit each: what has committed of a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepSet {
    bits: Vec<u64>,
    count: usize,
}

impl StepSet {
    /// An empty set for a plan of `steps` steps.
    pub fn with_steps(steps: usize) -> Self {
        StepSet { bits: vec![0; steps.div_ceil(64)], count: 0 }
    }

    /// Adds a step (a step out of range grows the set).
    pub fn insert(&mut self, step: u32) {
        let (word, bit) = (step as usize / 64, step % 64);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        if self.bits[word] & (1 << bit) == 0 {
            self.bits[word] |= 1 << bit;
            self.count += 1;
        }
    }

    /// Whether the step is in the set.
    pub fn contains(&self, step: u32) -> bool {
        self.bits.get(step as usize / 64).is_some_and(|word| word & (1 << (step % 64)) != 0)
    }

    /// How many steps are in the set.
    pub fn len(&self) -> usize {
        self.count
    }

    /// No step in the set.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The steps in the set, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(word, &bits)| {
            (0..64u32).filter(move |bit| bits & (1 << bit) != 0).map(move |bit| word as u32 * 64 + bit)
        })
    }
}

impl Extend<u32> for StepSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, steps: I) {
        for step in steps {
            self.insert(step);
        }
    }
}

/// A stretch of the plan committed everywhere before the next one starts
/// (see [`Plan::segments`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Tenant steps: one unit per tenant, independent of each other. Else
    /// single-schema steps: units that run one after another.
    pub tenants: bool,
    /// Its steps (indices into [`Plan::steps`]).
    pub steps: Range<u32>,
}

/// Steps of one schema that run together, in one transaction with their
/// bookkeeping rows (see [`Plan::segments`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Index into [`Plan::schemas`].
    pub schema: u32,
    /// Indices into [`Plan::steps`], in plan order.
    pub steps: Vec<u32>,
}

impl Plan {
    /// The plan cut for execution. Runs of consecutive single-schema steps
    /// and runs of consecutive tenant steps are segments; a segment starts
    /// only once the one before it has committed everywhere, so a tenant
    /// migration may rely on a single schema changed earlier in the version
    /// and the other way round. Its units come from [`Plan::units`].
    pub fn segments(&self, sources: &[crate::migrate::source::SourceMigration]) -> Vec<Segment> {
        let mut segments: Vec<Segment> = Vec::new();
        for run in &self.steps.runs {
            let tenants = sources[run.migration as usize].migration_type.is_tenant();
            match segments.last_mut() {
                Some(segment) if segment.tenants == tenants => segment.steps.end = run.end(),
                _ => segments.push(Segment { tenants, steps: run.start..run.end() }),
            }
        }
        segments
    }

    /// A segment's units, made one at a time. In a single-schema segment
    /// each maximal stretch of consecutive steps in one schema is a unit,
    /// and the units run one after another (plan order, exactly). In a
    /// tenant segment each tenant's steps, in plan order, are one unit, in
    /// the order of the schemas' indices; tenants are independent of each
    /// other, so those units may run concurrently.
    pub fn units<'p>(&'p self, segment: &Segment) -> Units<'p> {
        let runs = self.steps.runs_in(&segment.steps);
        if !segment.tenants {
            return Units { steps: &self.steps, runs, next: segment.steps.clone(), heap: None };
        }
        let heap = runs.iter().enumerate().map(|(index, run)| Reverse((run.schema, index))).collect();
        Units { steps: &self.steps, runs, next: segment.steps.clone(), heap: Some(heap) }
    }

    /// How many units [`Plan::units`] makes of a segment.
    pub fn unit_count(&self, segment: &Segment) -> usize {
        let runs = self.steps.runs_in(&segment.steps);
        if !segment.tenants {
            return self.units(segment).count();
        }
        let mut seen = vec![0u64; self.schemas.len().div_ceil(64)];
        let mut count = 0;
        for run in runs {
            for schema in run.schema..run.schema + run.len {
                let (word, bit) = (schema as usize / 64, schema % 64);
                if seen[word] & (1 << bit) == 0 {
                    seen[word] |= 1 << bit;
                    count += 1;
                }
            }
        }
        count
    }
}

/// The units of one segment, made as they are asked for (see
/// [`Plan::units`]).
#[derive(Debug)]
pub struct Units<'p> {
    steps: &'p Steps,
    runs: &'p [Run],
    /// A single-schema segment: the steps not yet handed out.
    next: Range<u32>,
    /// A tenant segment: each run's next schema, smallest first (a merge of
    /// the runs, each ascending).
    heap: Option<BinaryHeap<Reverse<(u32, usize)>>>,
}

impl Iterator for Units<'_> {
    type Item = Unit;

    fn next(&mut self) -> Option<Unit> {
        let Some(heap) = &mut self.heap else {
            let first = self.next.start;
            let schema = self.steps.get(first).filter(|_| first < self.next.end)?.schema;
            let mut steps = vec![first];
            self.next.start += 1;
            while self.next.start < self.next.end && self.steps.at(self.next.start).schema == schema {
                steps.push(self.next.start);
                self.next.start += 1;
            }
            return Some(Unit { schema, steps });
        };
        let Reverse((schema, _)) = *heap.peek()?;
        let mut steps = Vec::new();
        while let Some(&Reverse((next_schema, index))) = heap.peek() {
            if next_schema != schema {
                break;
            }
            heap.pop();
            let run = &self.runs[index];
            steps.push(run.start + (schema - run.schema));
            if schema + 1 < run.schema + run.len {
                heap.push(Reverse((schema + 1, index)));
            }
        }
        Some(Unit { schema, steps })
    }
}
