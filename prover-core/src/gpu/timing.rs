//! Device-side timing: each kernel or copy is bracketed by CUDA events on its stream; after the
//! work is done the pairs are resolved against an anchor event ([`DeviceClock`], the probe's
//! GPU-timeline helper), giving each operation a start and end on the session clock — the
//! "CUDA internal timing" next to the host's wrapper timer.
//!
//! Timing must not change what it times: recording an event is asynchronous, and nothing here
//! waits for the device until [`GpuTimeline::resolve`], which the backend calls once per phase,
//! after the phase's own last wait. The anchor's host time is found then, from one more event
//! recorded on the idle stream (waiting for the anchor when the timeline started, and resolving
//! each circuit's events before its MSM, cost a GPU proof 1.4 % on the H200:
//! docs/BENCHMARKS.md).

use super::GpuError;
use crate::probe::DeviceClock;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// One timed device operation on the session clock.
#[derive(Debug, Clone)]
pub struct TimedOp {
    pub name: &'static str,
    pub stream: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl TimedOp {
    pub fn ms(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / 1e6
    }
}

/// Events recorded during a piece of GPU work, resolved after the work synchronised.
#[derive(Debug)]
pub struct GpuTimeline {
    ctx: Arc<CudaContext>,
    /// The stream the anchor was recorded on.
    stream: Arc<CudaStream>,
    anchor: CudaEvent,
    pending: Vec<(&'static str, u32, CudaEvent, CudaEvent)>,
}

/// Whether the backend times its device work: while the probe records, unless
/// `PROOFSCOPE_GPU_TIMELINE=0` (read once) turns the GPU spans off.
pub fn wanted() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::probe::enabled()
        && !*OFF
            .get_or_init(|| std::env::var("PROOFSCOPE_GPU_TIMELINE").is_ok_and(|v| v.trim() == "0"))
}

/// A timeline when `on`; without one, operations run untimed (no events at all).
pub fn start_if(
    on: bool,
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
) -> Result<Option<GpuTimeline>, GpuError> {
    on.then(|| GpuTimeline::start(ctx, stream)).transpose()
}

/// Brackets one device operation with events when a timeline is kept.
pub fn timed<T>(
    tl: &mut Option<GpuTimeline>,
    name: &'static str,
    stream_id: u32,
    s: &CudaStream,
    f: impl FnOnce() -> Result<T, GpuError>,
) -> Result<T, GpuError> {
    let m = tl.as_ref().map(|x| x.mark(s)).transpose()?;
    let r = f()?;
    if let (Some(x), Some(m)) = (tl.as_mut(), m) {
        x.done(name, stream_id, s, m)?;
    }
    Ok(r)
}

/// The operations of a timeline kept by `start_if` (none when untimed).
pub fn finish(tl: Option<GpuTimeline>) -> Result<Vec<TimedOp>, GpuError> {
    tl.map_or(Ok(Vec::new()), GpuTimeline::resolve)
}

impl GpuTimeline {
    /// Records the anchor on `stream` (without waiting for it).
    pub fn start(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
    ) -> Result<GpuTimeline, GpuError> {
        let anchor = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(GpuError::driver)?;
        anchor.record(stream).map_err(GpuError::driver)?;
        Ok(GpuTimeline {
            ctx: ctx.clone(),
            stream: stream.clone(),
            anchor,
            pending: Vec::new(),
        })
    }

    /// An event recorded now on `stream` (the start of an operation).
    pub fn mark(&self, stream: &CudaStream) -> Result<CudaEvent, GpuError> {
        let e = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(GpuError::driver)?;
        e.record(stream).map_err(GpuError::driver)?;
        Ok(e)
    }

    /// Closes an operation started with `mark`.
    pub fn done(
        &mut self,
        name: &'static str,
        stream_id: u32,
        stream: &CudaStream,
        start: CudaEvent,
    ) -> Result<(), GpuError> {
        let end = self.mark(stream)?;
        self.pending.push((name, stream_id, start, end));
        Ok(())
    }

    /// Resolves every pair; waits for the timed work first (call it after the work's own
    /// last wait, where this costs nothing). The anchor's session time: an event recorded on
    /// the anchor's stream once it is idle completes at once, so the host's clock when it has
    /// completed, less the device time from the anchor to it, is the anchor's.
    pub fn resolve(self) -> Result<Vec<TimedOp>, GpuError> {
        self.ctx.synchronize().map_err(GpuError::driver)?;
        let now = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(GpuError::driver)?;
        now.record(&self.stream).map_err(GpuError::driver)?;
        now.synchronize().map_err(GpuError::driver)?;
        let host_now = DeviceClock::anchor_now().anchor_ns();
        let since = self.anchor.elapsed_ms(&now).map_err(GpuError::driver)?;
        let clock =
            DeviceClock::at(host_now.saturating_sub((f64::from(since.max(0.0)) * 1e6) as u64));
        let mut out = Vec::with_capacity(self.pending.len());
        for (name, stream, s, e) in &self.pending {
            let a = self.anchor.elapsed_ms(s).map_err(GpuError::driver)?;
            let b = self.anchor.elapsed_ms(e).map_err(GpuError::driver)?;
            let (start_ns, end_ns) = clock.span_ns(a, b);
            out.push(TimedOp {
                name,
                stream: *stream,
                start_ns,
                end_ns,
            });
        }
        Ok(out)
    }
}
