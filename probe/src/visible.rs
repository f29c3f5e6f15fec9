//! Which GPUs the prover can use, from `CUDA_VISIBLE_DEVICES`: the NVML sampler samples only
//! those, so that a fleet of provers each given one GPU of a host does not report every GPU
//! of the host once per prover (a sum over provers would multiply the host's energy).
//!
//! CUDA's rules, as far as they can be followed from NVML's side: the variable is a comma list
//! of device indices or UUIDs (`GPU-…`, a unique prefix is enough); the list ends at the first
//! entry that names no device; an empty value hides every GPU; unset, every GPU is visible.
//! Indices are taken in NVML's order (PCI bus order), which is CUDA's with
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID` and on hosts of one GPU model. A MIG entry (`MIG-…`) names
//! no whole GPU NVML could sample apart: every GPU stays sampled then.

use probe_protocol::GpuInfo;

/// The NVML indices of the GPUs `cuda_visible_devices` leaves visible, in its order.
pub fn visible_devices(cuda_visible_devices: Option<&str>, gpus: &[GpuInfo]) -> Vec<u32> {
    let all = || gpus.iter().map(|g| g.index).collect::<Vec<_>>();
    let Some(list) = cuda_visible_devices else {
        return all();
    };
    let mut visible = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.starts_with("MIG-") {
            return all();
        }
        let found = match entry.parse::<u32>() {
            Ok(i) => gpus.iter().find(|g| g.index == i),
            Err(_) => unique_by_uuid_prefix(entry, gpus),
        };
        match found {
            Some(g) if !visible.contains(&g.index) => visible.push(g.index),
            Some(_) => {}
            None => break,
        }
    }
    visible
}

fn unique_by_uuid_prefix<'a>(prefix: &str, gpus: &'a [GpuInfo]) -> Option<&'a GpuInfo> {
    if !prefix.starts_with("GPU-") {
        return None;
    }
    let mut matching = gpus.iter().filter(|g| g.uuid.starts_with(prefix));
    match (matching.next(), matching.next()) {
        (Some(g), None) => Some(g),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<GpuInfo> {
        (0..4)
            .map(|i| GpuInfo {
                index: i,
                uuid: format!("GPU-{i}a{i}b-0000-1111-2222-33334444555{i}"),
                ..GpuInfo::default()
            })
            .collect()
    }

    #[test]
    fn unset_means_every_gpu() {
        assert_eq!(visible_devices(None, &host()), vec![0, 1, 2, 3]);
    }

    #[test]
    fn indices_and_uuid_prefixes_in_their_order() {
        assert_eq!(visible_devices(Some("2"), &host()), vec![2]);
        assert_eq!(visible_devices(Some("3, 1"), &host()), vec![3, 1]);
        assert_eq!(visible_devices(Some("GPU-1a1b,0"), &host()), vec![1, 0]);
        assert_eq!(visible_devices(Some("1,1"), &host()), vec![1]);
    }

    #[test]
    fn the_list_ends_at_an_entry_that_names_no_gpu() {
        assert_eq!(visible_devices(Some("1,7,2"), &host()), vec![1]);
        assert_eq!(
            visible_devices(Some("0,GPU-"), &host()),
            vec![0],
            "ambiguous prefix"
        );
        assert_eq!(visible_devices(Some(""), &host()), Vec::<u32>::new());
        assert_eq!(visible_devices(Some("-1"), &host()), Vec::<u32>::new());
    }

    #[test]
    fn mig_keeps_every_gpu() {
        assert_eq!(
            visible_devices(Some("MIG-0e2b7c1f-aaaa"), &host()),
            vec![0, 1, 2, 3]
        );
    }
}
