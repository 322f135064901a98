#include <attune/diagnose/parse.hpp>

#include <attune/core/error.hpp>
#include <attune/diagnose/line_reader.hpp>
#include <attune/util/strings.hpp>

#include "dialects.hpp"
#include "split.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace attune::diagnose {
namespace {

using detail::DialectSpec;
using detail::Field;

// A failure sign: text that, when present (and `unless` absent), points at a status. When several
// signs appear the highest rank is the root cause (the convention the diagnosis test logs are
// labelled with: Slurm's DUE TO reason outranks what follows it, hardware outranks the NCCL errors
// it causes, and so on).
struct Signature {
    detail::Needle needle;
    Status status;
    int rank;
    detail::Needle unless = {};
    std::string_view cause = {};  // for an oom: what ran out (RunMetrics::cause)
};

const std::vector<Signature>& signatures() {
    static const std::vector<Signature> table = {
        {"DUE TO TIME LIMIT", Status::time_limit, 100},
        // The launch backends' own note of how the scheduler (or the local process) ended the job
        // (`attune: slurm job 12 ended in state NODE_FAIL ...`, docs/backends.md).
        {"ended in state TIMEOUT", Status::time_limit, 100},
        {"ended in state DEADLINE", Status::time_limit, 100},  // sbatch --deadline passed
        {"ended in state PREEMPTED", Status::preempted, 100},
        {"ended in state NODE_FAIL", Status::node_failure, 98},
        {"ended in state BOOT_FAIL", Status::node_failure, 98},
        // Slurm's OUT_OF_MEMORY is the job's cgroup limit: host memory.
        {"ended in state OUT_OF_MEMORY", Status::oom, 90, {}, k_host_memory},
        {"ended in state CANCELLED", Status::hang, 50},
        {"ended in state FAILED", Status::crash, 5},
        {"DUE TO PREEMPTION", Status::preempted, 100},
        {"DUE TO NODE FAILURE", Status::node_failure, 98},
        {"Node failure on", Status::node_failure, 98},
        {"fallen off the bus", Status::node_failure, 97},
        {"NVRM: Xid", Status::node_failure, 97},
        {"SLICE_FAILURE", Status::node_failure, 97},
        {"CUDA out of memory", Status::oom, 90, {}, k_gpu_memory},
        {"OutOfMemoryError", Status::oom, 90, {}, k_gpu_memory},
        {"RESOURCE_EXHAUSTED", Status::oom, 90, {}, k_gpu_memory},
        // The host's OOM killer, as slurmstepd, srun and the kernel report it: the rank dies by
        // SIGKILL (exit code -9), which alone reads as a crash.
        {"oom_kill event", Status::oom, 90, {}, k_host_memory},
        {"oom-kill event", Status::oom, 90, {}, k_host_memory},
        {": Out Of Memory", Status::oom, 90, {}, k_host_memory},
        {"Out of memory: Killed process", Status::oom, 90, {}, k_host_memory},
        {"Memory cgroup out of memory", Status::oom, 90, {}, k_host_memory},
        {"uncorrectable ECC error", Status::crash, 85},
        {"illegal memory access", Status::crash, 85},
        {"loss scale already at minimum", Status::diverged, 80},
        {"Unexpected result nan", Status::diverged, 80},
        // Megatron's NaN check on the gradients, raised by every rank that sees it.
        {"found NaN in local grad norm", Status::diverged, 80},
        {"is non-finite, so it cannot be clipped", Status::diverged, 80},
        {"ncclRemoteError", Status::nccl_error, 70},
        {"ncclSystemError", Status::nccl_error, 70},
        {"DistBackendError", Status::nccl_error, 70},
        {"ncclInternalError", Status::nccl_error, 70},
        {"Watchdog caught collective operation timeout", Status::nccl_timeout, 60},
        {"CANCELLED AT", Status::hang, 50, "DUE TO"},
        {"py-spy", Status::hang, 50},
        {" (idle): \"MainThread\"", Status::hang, 50},  // a py-spy dump's thread header
        {"heartbeat", Status::hang, 50},
        {"this job is preempted", Status::preempted, 45},
        {"Received signal 15", Status::preempted, 40},
        {"exitcode: -9", Status::crash, 10},
        {"exitcode  : -9", Status::crash, 10},
        {"Signals.SIGKILL", Status::crash, 10},
        {"ChildFailedError", Status::crash, 10},
        {"Traceback (most recent call last)", Status::crash, 10},
    };
    return table;
}

// NCCL's own warnings that mean a broken transport: the InfiniBand verbs, and the socket transport
// and bootstrap (misc/socket.cc, proxy.cc): a peer that died or a link that dropped, printed by
// several ranks at once, often before any training record. Looked for only in lines that hold
// `NCCL WARN` (most lines do not), before the table above; other NCCL warnings are benign (a
// missing net plugin) or named there (a CUDA failure).
constexpr detail::Needle k_nccl_warn("NCCL WARN");
const std::vector<Signature>& nccl_warn_signatures() {
    static const std::vector<Signature> table = {
        {"NCCL WARN NET/IB", Status::nccl_error, 70},
        {"socketProgress: Connection closed by remote peer", Status::nccl_error, 70},
        {"socketStartConnect", Status::nccl_error, 70},
        {"NCCL WARN NET/Socket", Status::nccl_error, 70},
        {"NCCL WARN Call to recv", Status::nccl_error, 70},
        {"Socket recv failed", Status::nccl_error, 70},
        {"Failed to execute operation Connect", Status::nccl_error, 70},
    };
    return table;
}

// Lines printed when training ends as planned: a silence before them is a final checkpoint or
// evaluation, not a hang.
const std::vector<detail::Needle>& completion_markers() {
    static const std::vector<detail::Needle> table = {"[after training is done]", "Trainer.fit` stopped", "Training completed"};
    return table;
}

constexpr int k_diverged_rank = 80;
// A skip streak outranks a traceback (the NaN assertions that end such a run) and nothing that names a cause.
constexpr int k_skip_streak_rank = 15;
constexpr std::size_t k_min_skip_streak = 3;
constexpr std::size_t k_min_collapsed_records = 3;
// A silence outranks the signs at or below a hang's (tracebacks, signal callbacks, a scancel) and a
// Slurm time limit, which only says when the wait ended; a sign that names a cause (an OOM, an
// NCCL watchdog) explains the silence instead.
constexpr int k_hang_rank = 50;
constexpr double k_min_silence_s = 30 * 60;
constexpr double k_silence_intervals = 20;
constexpr std::size_t k_evidence_per_status = 5;
constexpr std::size_t k_min_steady_steps = 3;
constexpr std::uintmax_t k_max_reserved_steps = 64u << 20;
static_assert(sizeof(StepRecord) == 64, "a step record stays one cache line: logs hold millions");

constexpr std::size_t k_huge_page_min_bytes = 4u << 20;
constexpr std::uintmax_t k_default_split_bytes = 64u << 20;
constexpr std::size_t k_parallel_summary_steps = 1u << 18;

// Gives the kernel `advice` (madvise) for the whole pages inside [data, data + bytes). Only advice:
// where the kernel declines (or on another system) nothing changes but speed and memory.
void advise_pages([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] int advice) {
#if defined(__linux__)
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(page - 1);
    if (end > begin) {
        madvise(reinterpret_cast<void*>(begin), end - begin, advice);  // NOLINT(performance-no-int-to-ptr)
    }
#endif
}

// Reserves room for `count` elements and asks the kernel to back the array with transparent huge
// pages. The per-step arrays of a multi-GB log are touched page by page as it is read, and on the
// bench's 2 GiB log the first-touch faults of 4 KiB pages took about half the parse time (perf);
// a 2 MiB page takes one fault for 512.
template <typename T>
void reserve_huge(std::vector<T>& values, std::size_t count) {
    values.reserve(count);
#if defined(MADV_HUGEPAGE)
    if (const std::size_t bytes = values.capacity() * sizeof(T); bytes >= k_huge_page_min_bytes) {
        advise_pages(values.data(), bytes, MADV_HUGEPAGE);
    }
#endif
}

// Appends `from` to `to` 8 MiB at a time and gives the pages of each piece copied back to the kernel:
// `from` (the later part's steps, not read again, its contents zero afterwards) and the copy are
// never both held, so a split parse peaks at the memory one thread's takes, and the copy's fresh
// pages come from the ones just given back.
template <typename T>
void append_giving_back(std::vector<T>& to, std::vector<T>& from) {
    constexpr std::size_t k_piece = (8u << 20) / sizeof(T);
    for (std::size_t at = 0; at < from.size(); at += k_piece) {
        const auto end = std::min(from.size(), at + k_piece);
        to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(at), from.begin() + static_cast<std::ptrdiff_t>(end));
#if defined(MADV_DONTNEED)
        advise_pages(from.data(), end * sizeof(T), MADV_DONTNEED);
#endif
    }
}

void set_field(StepRecord& record, Field field, double value) {
    switch (field) {
    case Field::step_time: record.step_time_s = value; break;
    case Field::tokens: record.tokens_per_s_per_gpu = value; break;
    case Field::tflops: record.tflops_per_gpu = value; break;
    case Field::loss:
        record.loss = value;
        record.loss_printed = true;
        break;
    case Field::grad_norm: record.grad_norm = value; break;
    case Field::memory: record.memory_gib = std::max(value, record.memory_gib.value_or(value)); break;
    }
}

// The median of `values`, which are reordered (nth_element keeps them as a multiset: a caller that
// needs the values but not their order can go on using them).
double median_in_place(std::vector<double>& values) {
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    if (values.size() % 2 == 1) {
        return *middle;
    }
    return (*std::max_element(values.begin(), middle) + *middle) / 2.0;
}

double median_of_values(std::vector<double> values) { return median_in_place(values); }

// The state of one parse: the chosen record format, the steps so far and the failure signs.
class Parser {
public:
    Parser(const DialectSpec* forced, HangCheck hang) : m_spec(forced), m_hang(hang), m_forced(forced != nullptr) {
        if (forced != nullptr) {
            m_dialect = std::string(forced->name);
        }
        narrow_candidates();
    }

    /// One line; `has_escape`: it holds ESC (LineReader::has_escape), so colour escapes are dropped first.
    void feed(std::string_view line, std::size_t line_number, bool has_escape) {
        if (has_escape) {
            line = detail::without_ansi(line, m_clean);
        }
        if (m_marker_dialect.empty() && m_dialect.empty()) {
            detect_marker(line);
        }
        if (read_record(line, line_number)) {
            return;
        }
        if ((m_spec != nullptr && detail::contains_any(line, m_spec->chatter)) || attach(line)) {
            m_record_open = false;
            return;
        }
        if (m_record_open && rejoin(line)) {
            return;
        }
        m_record_open = false;
        note_time(line, line_number);
        if (!note_skip(line, line_number)) {
            note_signatures(line, line_number);
        }
    }

    /// Seconds since the log was last written, for a job still running (HangCheck::now).
    void set_live_silence(double seconds) { m_live_silence_s = seconds; }

    RunMetrics finish() {
        RunMetrics metrics;
        // Without records, a framework's own wording names the dialect; bare system messages are
        // generic; a log with neither has none.
        metrics.dialect = !m_dialect.empty() ? m_dialect : !m_marker_dialect.empty() ? m_marker_dialect : m_signs.empty() ? "" : "generic";
        metrics.steps = std::move(m_steps);
        metrics.last_step = m_last_step;
        metrics.peak_memory_gib = m_peak_memory;
        if (metrics.peak_memory_gib) {
            metrics.peak_memory_gib = std::round(*metrics.peak_memory_gib * 100.0) / 100.0;
        }
        judge(metrics);
        if (metrics.status == Status::ok && !recognised()) {
            metrics.status = Status::unknown;
            metrics.evidence.push_back({0, "no training record and no failure message recognised"});
        }
        return metrics;
    }

    // Reserves room for the steps a log of this size can hold (a record is well over 128 bytes):
    // untouched reserved memory costs nothing, and the steps are not copied as they grow.
    void expect_bytes(std::uintmax_t bytes) {
        const auto steps = static_cast<std::size_t>(std::min<std::uintmax_t>(bytes / 128, k_max_reserved_steps));
        reserve_huge(m_steps, steps);
        reserve_huge(m_rank0, steps);
    }

    [[nodiscard]] bool recognised() const { return !m_dialect.empty() || !m_marker_dialect.empty() || !m_signs.empty(); }

    /// Whether absorb(later, boundary) gives what feeding later's lines here would. `later` started at
    /// `boundary` with its format and read the rest of the file while this parser read up to it.
    /// False when this parser decided another dialect before the boundary (it would not read the
    /// boundary line as a record), or when later attached fields to a step this parser may hold too
    /// (here they would go to the record kept here, there they went to later's copy).
    [[nodiscard]] bool can_absorb(const Parser& later, const detail::Boundary& boundary) const {
        if ((!m_dialect.empty() && m_dialect != boundary.spec->name) || later.m_steps.empty()) {
            return false;  // (later holds no step only when the file changed under the reads)
        }
        // Runtime step lines give way to the loop's wherever these appear: read on one thread.
        if (boundary.spec->engine || (m_spec != nullptr && m_spec->engine)) {
            return false;
        }
        // A streak of skipped steps may run across the cut: read on one thread instead.
        if (m_skip_streak > 0 || later.m_skip_lines > 0) {
            return false;
        }
        return !later.m_attached_to_steps || !overlaps(later);
    }

    /// Takes over the state of `later` (see can_absorb; its text is moved and its steps given back, so
    /// it is only fit to be destroyed) as if this parser had fed its lines;
    /// `lines_before`: the lines of the file before the boundary, which later numbered from 1.
    void absorb(Parser& later, const detail::Boundary& boundary, std::size_t lines_before) {
        m_spec = later.m_spec;
        if (m_dialect != later.m_dialect) {
            m_dialect = later.m_dialect;
            narrow_candidates();
        }
        absorb_steps(later);
        absorb_signs(later, lines_before);
        m_records_seen += later.m_records_seen;
        if (later.m_last_step) {
            m_last_step = std::max(m_last_step.value_or(*later.m_last_step), *later.m_last_step);
        }
        if (later.m_peak_memory) {
            raise_peak_memory(*later.m_peak_memory);
        }
        absorb_progress(later, boundary, lines_before);
    }

private:
    struct Sign {
        const Signature* signature;
        Evidence evidence;
        std::size_t records_before = 0;  // record lines seen when the sign appeared
    };

    // The lowest and highest step held (they rise, first to last, unless the index was built).
    [[nodiscard]] std::pair<long long, long long> step_range() const {
        if (m_index.empty()) {
            return {m_steps.front().step, m_steps.back().step};
        }
        const auto [low, high] = std::minmax_element(m_steps.begin(), m_steps.end(), [](const StepRecord& a, const StepRecord& b) { return a.step < b.step; });
        return {low->step, high->step};
    }

    // Whether the two parsers' step ranges meet (then they may hold the same step).
    [[nodiscard]] bool overlaps(const Parser& later) const {
        if (m_steps.empty() || later.m_steps.empty()) {
            return false;
        }
        return later.step_range().first <= step_range().second && step_range().first <= later.step_range().second;
    }

    // Later's steps as store() would have taken its records: a step both hold keeps rank 0's record,
    // else the first printed (store() keeps the same one of later's own duplicates), and new steps
    // follow in later's order. A log whose steps rise across the cut is one append.
    void absorb_steps(Parser& later) {
        const auto last = later.m_steps[later.m_last_index].step;
        if (m_index.empty() && later.m_index.empty() && (m_steps.empty() || later.m_steps.front().step > m_steps.back().step)) {
            append_giving_back(m_steps, later.m_steps);
            m_rank0.insert(m_rank0.end(), later.m_rank0.begin(), later.m_rank0.end());
        } else {
            for (std::size_t i = 0; i < later.m_steps.size(); ++i) {
                store(later.m_steps[i], later.m_rank0[i] != 0 ? std::optional<int>(0) : std::nullopt);
            }
        }
        m_last_index = *index_of(last);
    }

    // Later's failure signs after this parser's, up to the same number per status, counted in the
    // whole file's lines and records.
    void absorb_signs(const Parser& later, std::size_t lines_before) {
        for (auto sign : later.m_signs) {
            if (keeps_sign(sign.signature->status)) {
                sign.evidence.line += lines_before;
                sign.records_before += m_records_seen;
                m_signs.push_back(std::move(sign));
            }
        }
    }

    // The progress state after later's last record, and the intervals between records: later's, and
    // the one from this parser's last record to the boundary line (later's first).
    void absorb_progress(Parser& later, const detail::Boundary& boundary, std::size_t lines_before) {
        if (m_progress_stamp && boundary.stamp && *boundary.stamp > *m_progress_stamp) {
            m_intervals.push_back(static_cast<double>(*boundary.stamp - *m_progress_stamp));
        }
        m_intervals.insert(m_intervals.end(), later.m_intervals.begin(), later.m_intervals.end());
        m_last_progress = std::move(later.m_last_progress);
        m_last_progress.line += lines_before;
        m_progress_stamp = later.m_progress_stamp;
        m_after_stamp = later.m_after_stamp;
        m_after_line = std::move(later.m_after_line);
        if (m_after_line) {
            m_after_line->line += lines_before;
        }
        m_completed = later.m_completed;
        m_record_open = later.m_record_open;
    }

    // Whether a sign of `status` is still kept as evidence: the first few of each status are.
    [[nodiscard]] bool keeps_sign(Status status) const {
        const auto same = std::count_if(m_signs.begin(), m_signs.end(), [&](const Sign& s) { return s.signature->status == status; });
        return static_cast<std::size_t>(same) < k_evidence_per_status;
    }

    void detect_marker(std::string_view line) {
        for (const auto& spec : detail::dialect_specs()) {
            if (detail::contains_any(line, spec.markers)) {
                m_marker_dialect = std::string(spec.name);
                return;
            }
        }
    }

    const DialectSpec* matching_spec(std::string_view line) const {
        if (m_spec != nullptr && detail::is_record(line, *m_spec)) {
            return m_spec;
        }
        // Once records are seen (or --dialect is given) only that dialect's formats are tried.
        for (const auto* spec : m_candidates) {
            if (spec != m_spec && detail::is_record(line, *spec)) {
                return spec;
            }
        }
        return nullptr;
    }

    // The formats tried on each line: every one until the dialect is known, then that dialect's.
    // While only a runtime's own step lines were read, the training loop's may still come in any
    // dialect; once they have, the runtime's lines are no records.
    void narrow_candidates() {
        m_candidates.clear();
        for (const auto& spec : detail::dialect_specs()) {
            if (spec.engine && m_loop_seen) {
                continue;
            }
            if (m_dialect.empty() || spec.name == m_dialect || (!m_forced && !m_loop_seen)) {
                m_candidates.push_back(&spec);
            }
        }
    }

    // The training loop's first record: the runtime's step records read so far are dropped (its
    // steps count differently: micro steps, every tenth step), what they said of memory is kept.
    void replace_engine_records() {
        m_steps.clear();
        m_rank0.clear();
        m_index.clear();
        m_last_index = 0;
        m_last_step.reset();
        m_last_record_step = std::numeric_limits<long long>::min();
    }

    std::optional<long long> step_of(const DialectSpec& spec, std::string_view line) const {
        if (detail::numbers_by_order(spec)) {
            return static_cast<long long>(m_steps.size() + 1);
        }
        return detail::printed_step(spec, line);
    }

    bool read_record(std::string_view line, std::size_t line_number) {
        const auto* spec = matching_spec(line);
        if (spec == nullptr) {
            note_bar(line);
            return false;
        }
        if (!spec->engine && !m_loop_seen) {
            // Before the loop's record is numbered: a dialect without a step key counts its records.
            if (m_spec != nullptr && m_spec->engine) {
                replace_engine_records();
            }
            m_loop_seen = true;
            m_dialect = std::string(spec->name);
            narrow_candidates();
        }
        const auto step = step_of(*spec, line);
        if (!step) {
            return false;
        }
        m_spec = spec;
        if (m_dialect != spec->name) {
            m_dialect = std::string(spec->name);
            narrow_candidates();
        }
        if (!spec->step_key.empty() || spec->step_from_bar) {
            m_last_step = std::max(m_last_step.value_or(*step), *step);
        } else {
            note_bar(line);
        }
        ++m_records_seen;
        if (*step != m_last_record_step) {
            if (!m_skipped_since_record) {
                m_skip_streak = 0;
            }
            m_skipped_since_record = false;
            m_last_record_step = *step;
        }
        StepRecord record;
        record.step = *step;
        read_fields(*spec, line, record);
        m_record_open = store(record, detail::line_rank(line));
        note_progress(line, line_number);
        return true;
    }

    // Keys that spell the same field differently ("(ms)" or "(s)") are alternatives: the first one
    // the text has gives the field, and the others are not searched for.
    static void read_fields(const DialectSpec& spec, std::string_view text, StepRecord& record) {
        unsigned filled = 0;
        for (const auto& field : spec.fields) {
            const auto bit = 1u << static_cast<unsigned>(field.field);
            if ((filled & bit) == 0) {
                if (double value = 0; detail::read_number_after(text, field.key, field.part, value)) {
                    set_field(record, field.field, value * field.scale);
                    filled |= bit;
                }
            }
        }
    }

    // A record a terminal or a log collector hard-wrapped: `line`, which is no record, continues the
    // record just stored when it holds a field key that record lacks, or when a number was cut (the
    // record ends in a digit or point and the line goes on with one). The record is read again from
    // the joined text (the wrap added only the line break); a third piece joins the same way.
    bool rejoin(std::string_view line) {
        const std::string& record_text = m_last_progress.text;
        line.remove_prefix(piece_prefix(record_text, line));
        const bool cut_number = !record_text.empty() && !line.empty() && is_number_char(record_text.back()) &&
                                (is_number_char(line.front()) || line.front() == 'E' || line.front() == 'e');
        const bool new_key = std::any_of(m_spec->fields.begin(), m_spec->fields.end(), [&](const detail::FieldSpec& field) {
            return detail::contains(line, field.key) && !detail::contains(record_text, field.key);
        });
        if (!cut_number && !new_key) {
            return false;
        }
        m_last_progress.text.append(line);
        StepRecord record;
        record.step = m_steps[m_last_index].step;
        read_fields(*m_spec, m_last_progress.text, record);
        if (record.memory_gib) {
            raise_peak_memory(*record.memory_gib);
        }
        m_steps[m_last_index] = record;
        return true;
    }

    static bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '.'; }

    // A collector that stamps every piece of a line it wraps (Kubernetes' CRI log: `<time> stdout P `,
    // then `F` on the last piece) repeats the record's prefix before each piece: the bytes both lines
    // start with, alike in shape (a digit where a digit was, a letter where a letter was) up to a space,
    // holding a time. Their length, or 0.
    static std::size_t piece_prefix(std::string_view record, std::string_view line) {
        auto kind = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) ? '0' : std::isalpha(static_cast<unsigned char>(c)) ? 'a' : c; };
        const std::size_t n = std::min(record.size(), line.size());
        std::size_t cut = 0;
        for (std::size_t i = 0; i < n && kind(record[i]) == kind(line[i]); ++i) {
            if (line[i] == ' ') cut = i + 1;
        }
        return cut > 0 && detail::timestamp_of(line.substr(0, cut)) ? cut : 0;
    }

    // The last progress record and its time; the silence after it is measured from here.
    void note_progress(std::string_view line, std::size_t line_number) {
        m_last_progress.line = line_number;
        m_last_progress.text.assign(util::trim(line));
        m_completed = false;
        m_after_line.reset();
        const auto stamp = detail::timestamp_of(line);
        if (!stamp) {
            // A record without a time leaves the silence unknown rather than measured from an older record.
            m_progress_stamp.reset();
            m_after_stamp.reset();
            return;
        }
        // The time is stored as a number, not copied as an optional: the copy went through the stack
        // in two stores and one 16-byte load that stalled on every record (perf: a third of feed's time).
        const long long seconds = *stamp;
        if (m_progress_stamp && seconds > *m_progress_stamp) {
            m_intervals.push_back(static_cast<double>(seconds - *m_progress_stamp));
        }
        m_progress_stamp = seconds;
        m_after_stamp = seconds;
    }

    // Times printed after the last progress record, and whether training then finished as planned.
    // Nothing is parsed before a timed record: the cost stays off logs that print no times.
    void note_time(std::string_view line, std::size_t line_number) {
        if (!m_progress_stamp) {
            return;
        }
        if (!m_completed && detail::contains_any(line, completion_markers())) {
            m_completed = true;
        }
        if (const auto stamp = detail::timestamp_of(line); stamp && *stamp > *m_after_stamp) {
            m_after_stamp = stamp;
            m_after_line = Evidence{line_number, std::string(util::trim(line))};
        }
    }

    void raise_peak_memory(double gib) { m_peak_memory = std::max(gib, m_peak_memory.value_or(0.0)); }

    // Several ranks print the same step: rank 0's line is kept, else the first one printed.
    // Whether `record` is the one kept for its step (a later rank's copy of a step is not).
    bool store(const StepRecord& record, std::optional<int> rank) {
        if (record.memory_gib) {
            raise_peak_memory(*record.memory_gib);
        }
        if (m_index.empty() && (m_steps.empty() || record.step > m_steps.back().step)) {
            // the common case, a new highest step: no search
            m_steps.push_back(record);
            m_rank0.push_back(rank == 0 ? 1 : 0);
            m_last_index = m_steps.size() - 1;
            return true;
        }
        const auto found = index_of(record.step);
        if (!found) {
            add_index(record.step);
            m_steps.push_back(record);
            m_rank0.push_back(rank == 0 ? 1 : 0);
            m_last_index = m_steps.size() - 1;
            return true;
        }
        m_last_index = *found;
        if (rank == 0 && m_rank0[*found] == 0) {
            m_steps[*found] = record;
            m_rank0[*found] = 1;
            return true;
        }
        return false;
    }

    // Steps nearly always rise, so the steps themselves are the index (binary search); a hash map
    // is built only once a step goes back (a restart from a checkpoint).
    std::optional<std::size_t> index_of(long long step) const {
        if (!m_index.empty()) {
            const auto it = m_index.find(step);
            return it == m_index.end() ? std::nullopt : std::optional<std::size_t>(it->second);
        }
        const auto it = std::lower_bound(m_steps.begin(), m_steps.end(), step, [](const StepRecord& r, long long s) { return r.step < s; });
        return it != m_steps.end() && it->step == step ? std::optional<std::size_t>(it - m_steps.begin()) : std::nullopt;
    }

    void add_index(long long step) {
        if (m_index.empty() && (m_steps.empty() || step > m_steps.back().step)) {
            return;
        }
        if (m_index.empty()) {
            for (std::size_t i = 0; i < m_steps.size(); ++i) {
                m_index.emplace(m_steps[i].step, i);
            }
        }
        m_index.emplace(step, m_steps.size());
    }

    bool attach(std::string_view line) {
        if (m_spec == nullptr) {
            return false;
        }
        if (m_loop_seen && engine_memory(line)) {
            return true;
        }
        for (const auto& attachment : m_spec->attachments) {
            if (!detail::contains(line, attachment.anchor)) {
                continue;
            }
            for (const auto& field : attachment.fields) {
                const auto value = detail::number_after(line, field.key, field.part);
                if (!value) {
                    continue;
                }
                if (field.field == Field::memory) {
                    // memory reports come once per rank; only the peak over ranks is a figure
                    raise_peak_memory(*value * field.scale);
                } else if (m_last_index < m_steps.size()) {
                    set_field(m_steps[m_last_index], field.field, *value * field.scale);
                    m_attached_to_steps = true;
                }
            }
            return true;
        }
        return false;
    }

    // Once the loop's records are the steps, a runtime step line still says how much memory the
    // ranks reached.
    bool engine_memory(std::string_view line) {
        for (const auto& spec : detail::dialect_specs()) {
            if (!spec.engine || !detail::is_record(line, spec)) {
                continue;
            }
            for (const auto& field : spec.fields) {
                if (field.field != Field::memory) {
                    continue;
                }
                if (const auto value = detail::number_after(line, field.key, field.part)) {
                    raise_peak_memory(*value * field.scale);
                }
            }
            return true;
        }
        return false;
    }

    void note_bar(std::string_view line) {
        static constexpr detail::Needle k_validation("Validation");
        if (m_spec != nullptr && (m_spec->step_from_bar || m_spec->name == "hf") && !detail::contains(line, k_validation)) {
            if (const auto counter = detail::bar_counter(line)) {
                m_last_step = std::max(m_last_step.value_or(*counter), *counter);
            }
        }
    }

    // A mixed-precision step skipped on a gradient overflow (DeepSpeed's and apex's loss scalers say
    // "Skipping step"). Skips are normal while the loss scale settles, and each later step that
    // completes ends the streak; a streak nothing ends is a run whose gradients stay inf/NaN.
    bool note_skip(std::string_view line, std::size_t line_number) {
        static constexpr detail::Needle k_skip("Skipping step");
        if (!detail::contains(line, k_skip)) {
            return false;
        }
        ++m_skip_lines;
        if (m_skip_streak++ == 0) {
            m_streak_start = Evidence{line_number, std::string(util::trim(line))};
        }
        m_skipped_since_record = true;
        return true;
    }

    void note_signatures(std::string_view line, std::size_t line_number) {
        const detail::ByteSet bytes(line);
        if (bytes.may_hold(k_nccl_warn) && detail::contains(line, k_nccl_warn) &&
            note_sign_of(nccl_warn_signatures(), line, bytes, line_number)) {
            return;
        }
        note_sign_of(signatures(), line, bytes, line_number);
    }

    // Notes the first sign of `table` the line holds; whether there was one.
    bool note_sign_of(const std::vector<Signature>& table, std::string_view line, const detail::ByteSet& bytes,
                      std::size_t line_number) {
        for (const auto& signature : table) {
            if (!bytes.may_hold(signature.needle) || !detail::contains(line, signature.needle) ||
                (!signature.unless.empty() && detail::contains(line, signature.unless))) {
                continue;
            }
            if (keeps_sign(signature.status)) {
                m_signs.push_back({&signature, {line_number, std::string(util::trim(line))}, m_records_seen});
            }
            return true;
        }
        return false;
    }

    // What the records' values say of a diverged run, or nothing: the last record's loss or grad
    // norm is NaN/inf, or the loss collapsed to exactly 0 and stayed there (a cross-entropy loss is
    // never exactly 0; a model whose weights went NaN and a loss masked to zero print it).
    static std::optional<std::string> diverged_in_records(const std::vector<StepRecord>& steps) {
        if (steps.empty()) {
            return std::nullopt;
        }
        const auto& last = steps.back();
        const bool bad_loss = last.loss && !std::isfinite(*last.loss);
        const bool bad_grad = last.grad_norm && !std::isfinite(*last.grad_norm);
        if (bad_loss || (bad_grad && (!last.loss || *last.loss == 0.0))) {
            return "step " + std::to_string(last.step) + ": loss or grad norm is not finite";
        }
        return collapsed_to_zero(steps);
    }

    static std::optional<std::string> collapsed_to_zero(const std::vector<StepRecord>& steps) {
        std::size_t zeros = 0;
        long long since = 0;
        for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
            if (!it->loss) {
                continue;
            }
            if (*it->loss != 0.0) {
                if (zeros < k_min_collapsed_records || *it->loss < 0.0) {
                    return std::nullopt;
                }
                return "loss exactly 0 in the last " + std::to_string(zeros) + " records, from step " + std::to_string(since) +
                       " (step " + std::to_string(it->step) + " had " + util::format_number(*it->loss) + ")";
            }
            ++zeros;
            since = it->step;
        }
        return std::nullopt;
    }

    // A streak of skipped steps still running at the end of the log, as a diverged sign.
    [[nodiscard]] bool skip_streak_diverged() const { return m_skip_streak >= k_min_skip_streak; }

    void judge(RunMetrics& metrics) const {
        const Sign* winner = nullptr;
        for (const auto& sign : m_signs) {
            // A failure followed by new step records was recovered (an in-job restart): the run is
            // judged by its final outcome.
            if (sign.records_before < m_records_seen) {
                continue;
            }
            if (winner == nullptr || sign.signature->rank > winner->signature->rank) {
                winner = &sign;
            }
        }
        const auto in_records = diverged_in_records(metrics.steps);
        if (in_records && (winner == nullptr || winner->signature->rank <= k_diverged_rank)) {
            metrics.status = Status::diverged;
            metrics.evidence.push_back({0, *in_records});
        } else if (skip_streak_diverged() && (winner == nullptr || winner->signature->rank <= k_skip_streak_rank)) {
            metrics.status = Status::diverged;
            metrics.evidence.push_back(m_streak_start);
            metrics.evidence.push_back({0, std::to_string(m_skip_streak) + " steps skipped on gradient overflow in a row, and no step completed after them"});
        } else if (const auto silence = silent_hang(winner)) {
            metrics.status = Status::hang;
            metrics.evidence = *silence;
        } else if (winner != nullptr) {
            metrics.status = winner->signature->status;
            metrics.cause = std::string(winner->signature->cause);
        }
        for (const auto& sign : m_signs) {
            const bool quoted = std::any_of(metrics.evidence.begin(), metrics.evidence.end(), [&](const Evidence& e) { return e.line == sign.evidence.line; });
            if (sign.signature->status == metrics.status && sign.records_before == m_records_seen && !quoted) {
                metrics.evidence.push_back(sign.evidence);
            }
        }
    }

    // The silence threshold: --hang-after, else the larger of 30 min and 20 progress intervals.
    double silence_threshold() const {
        if (m_hang.after_s) {
            return *m_hang.after_s;
        }
        if (m_intervals.empty()) {
            return k_min_silence_s;
        }
        return std::max(k_min_silence_s, k_silence_intervals * median_of_values(m_intervals));
    }

    // The evidence of a hang when progress stopped for longer than the threshold and nothing that
    // names another cause follows: the last progress line, the later line that dates the silence
    // (or the file's modification time) and the measured silence.
    std::optional<std::vector<Evidence>> silent_hang(const Sign* winner) const {
        const bool explained = winner != nullptr && winner->signature->rank > k_hang_rank && winner->signature->status != Status::time_limit;
        if (explained || m_completed) {
            return std::nullopt;
        }
        const double threshold = silence_threshold();
        std::vector<Evidence> evidence;
        if (m_records_seen > 0) {
            evidence.push_back(m_last_progress);
        }
        if (m_progress_stamp && m_after_line && static_cast<double>(*m_after_stamp - *m_progress_stamp) > threshold) {
            evidence.push_back(*m_after_line);
            evidence.push_back({0, "no progress for " + std::to_string(*m_after_stamp - *m_progress_stamp) +
                                       " s by the log's timestamps (threshold " + std::to_string(std::lround(threshold)) + " s)"});
            return evidence;
        }
        // A running job's log that stopped growing: only when the log itself shows no failure.
        if (winner == nullptr && m_live_silence_s && *m_live_silence_s > threshold) {
            evidence.push_back({0, "log last written " + std::to_string(std::lround(*m_live_silence_s)) + " s ago (threshold " +
                                       std::to_string(std::lround(threshold)) + " s)"});
            return evidence;
        }
        return std::nullopt;
    }

    const DialectSpec* m_spec;
    HangCheck m_hang;
    std::vector<const DialectSpec*> m_candidates;
    std::string m_dialect;         // from the records (or --dialect)
    std::string m_marker_dialect;  // from framework wording, used when no record is seen
    std::vector<StepRecord> m_steps;
    std::vector<std::uint8_t> m_rank0;  // per step: 1 when rank 0 printed the record kept
    std::unordered_map<long long, std::size_t> m_index;
    std::size_t m_last_index = 0;
    std::size_t m_records_seen = 0;  // record lines, duplicates included
    std::optional<long long> m_last_step;
    std::optional<double> m_peak_memory;
    std::vector<Sign> m_signs;
    std::string m_clean;                        // a line without its colour escapes
    Evidence m_last_progress;                // the last progress record line
    std::optional<long long> m_progress_stamp;  // its time, if it prints one
    std::optional<long long> m_after_stamp;     // the latest time printed since
    std::optional<Evidence> m_after_line;       // the line that printed it
    std::vector<double> m_intervals;            // seconds between successive timed records
    bool m_completed = false;                   // training finished as planned after the last record
    std::optional<double> m_live_silence_s;
    bool m_attached_to_steps = false;           // an attachment line set a field of a step
    std::size_t m_skip_lines = 0;               // "Skipping step" lines seen
    std::size_t m_skip_streak = 0;              // steps skipped since the last step that completed
    bool m_skipped_since_record = false;        // a skip line since the last new step's record
    long long m_last_record_step = std::numeric_limits<long long>::min();
    Evidence m_streak_start;                    // the first skip line of the streak
    bool m_record_open = false;                 // the last line was the kept record of its step (or its wrapped rest)
    bool m_forced = false;                      // --dialect (or a split's boundary) chose the dialect
    bool m_loop_seen = false;                   // a record of the training loop, not the runtime's engine, was read
};

const DialectSpec* forced_spec(const std::optional<std::string>& dialect) {
    if (!dialect) {
        return nullptr;
    }
    for (const auto& spec : detail::dialect_specs()) {
        if (spec.name == *dialect) {
            return &spec;
        }
    }
    std::string message = "unknown log dialect '" + *dialect + "': expected one of " + util::join(dialect_names(), ", ");
    if (const auto suggestion = util::closest_match(*dialect, dialect_names())) {
        message += " (did you mean '" + *suggestion + "'?)";
    }
    throw InputError(message);
}

// Feeds the lines of `range` of `path` to `parser`, numbered after `lines_before`; returns the number of lines read.
std::size_t feed_range(Parser& parser, const std::filesystem::path& path, ByteRange range, std::size_t lines_before) {
    LineReader reader(path, LineReader::k_default_max_line, range);
    std::string_view line;
    while (reader.next(line)) {
        parser.feed(line, lines_before + reader.line_number(), reader.has_escape());
    }
    return reader.line_number();
}

// The size of `path` when it is a regular file, else 0 (a pipe, a folder, an error).
std::uintmax_t regular_file_size(const std::filesystem::path& path) {
    std::error_code error;
    const auto size = std::filesystem::is_regular_file(path, error) ? std::filesystem::file_size(path, error) : 0;
    return error ? 0 : size;
}

// Where to cut a file of `size` bytes for two threads, if it is large enough and a boundary lies near `split.at`.
std::optional<detail::Boundary> cut_of(const std::filesystem::path& path, std::uintmax_t size, const DialectSpec* forced, const SplitPolicy& split) {
    if (size == 0 || size < split.min_bytes) {
        return std::nullopt;
    }
    const auto from = static_cast<std::uintmax_t>(static_cast<double>(size) * std::clamp(split.at, 0.0, 1.0));
    return detail::find_boundary(path, from, forced);
}

// Reads one file into `parser`. A large file is cut at a boundary (split.hpp): the part after it is
// parsed on a second thread by a parser started with the boundary's format while this thread parses
// the part before, and then absorbed. In the rare case where absorbing would not give what one
// parser gives (Parser::can_absorb), this thread reads the part after the cut itself.
void read_log(Parser& parser, const std::filesystem::path& path, const DialectSpec* forced, const HangCheck& hang, const SplitPolicy& split) {
    const auto size = regular_file_size(path);
    const auto cut = cut_of(path, size, forced, split);
    if (!cut) {
        feed_range(parser, path, {}, 0);
        return;
    }
    auto later_part = std::async(std::launch::async, [&] {
        Parser later(cut->spec, hang);
        later.expect_bytes(size > cut->offset ? size - cut->offset : 0);
        feed_range(later, path, {.begin = cut->offset}, 0);
        return later;
    });
    const auto lines_before = feed_range(parser, path, {.begin = 0, .end = cut->offset}, 0);
    auto later = later_part.get();
    if (parser.can_absorb(later, *cut)) {
        parser.absorb(later, *cut, lines_before);
    } else {
        feed_range(parser, path, {.begin = cut->offset}, lines_before);
    }
}

// Throws InputError for a file that is not a text log: one whose first 64 KiB are more than a tenth
// control bytes (an archive, a core dump, a checkpoint). A pipe is not sniffed: what is read from it
// is gone. (A missing file is the line reader's error.)
void refuse_binary(const std::filesystem::path& path) {
    constexpr std::size_t k_sniff_bytes = 64u << 10;
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
        return;
    }
    std::ifstream file(path, std::ios::binary);
    std::string head(k_sniff_bytes, '\0');
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(file.gcount()));
    const auto control = std::count_if(head.begin(), head.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 && byte != '\n' && byte != '\r' && byte != '\t' && byte != '\f' && byte != '\b' && byte != 0x1b;
    });
    if (!head.empty() && static_cast<std::size_t>(control) * 10 > head.size()) {
        throw InputError(path.string() + ": not a text log (" + std::to_string(control) + " of its first " + std::to_string(head.size()) +
                         " bytes are control characters)");
    }
}

// Relative spread: median absolute deviation over the median `centre` of `values`. The values are
// overwritten by their deviations: a multi-GB log has millions of steps, and no copy is made.
std::optional<double> noise_in_place(std::vector<double>& values, double centre) {
    if (values.size() < 2) {
        return std::nullopt;
    }
    for (auto& v : values) {
        v = std::abs(v - centre);
    }
    return centre == 0.0 ? std::nullopt : std::optional<double>(median_in_place(values) / centre);
}

// The median of one column's finite values over the steps `keep` accepts, or none.
// `buffer` holds the column afterwards (partially sorted), for a noise figure.
template <typename Keep>
std::optional<double> median_of_column(std::vector<StepRecord>::const_iterator first, std::vector<StepRecord>::const_iterator last,
                                       OptionalDouble StepRecord::* member, const Keep& keep, std::vector<double>& buffer) {
    buffer.clear();
    for (auto it = first; it != last; ++it) {
        if (const auto& value = (*it).*member; value && std::isfinite(*value) && keep(*it)) {
            buffer.push_back(*value);
        }
    }
    return buffer.empty() ? std::nullopt : std::optional<double>(median_in_place(buffer));
}

}  // namespace

const std::vector<std::string>& dialect_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> list;
        for (const auto& spec : detail::dialect_specs()) {
            if (std::find(list.begin(), list.end(), spec.name) == list.end()) {
                list.emplace_back(spec.name);
            }
        }
        return list;
    }();
    return names;
}

void summarise(RunMetrics& metrics) {
    // The steady steps: the first (warm-up: compilation, allocator growth) is dropped, then any whose
    // step time (or throughput) is more than twice or less than half the median (restarts, async
    // artefacts). A multi-GB log has millions of steps: there is no list of the steady steps, and one
    // buffer serves the other columns in turn (fresh pages are costly: a column is 8 bytes a step)
    // while the TFLOP/s column, on a second thread when the steps are many, has its own.
    const auto& steps = metrics.steps;
    metrics.steady = {};
    std::size_t used = 0;
    if (steps.size() >= 2) {
        const auto first = steps.begin() + 1;
        const bool by_time = std::any_of(first, steps.end(), [](const StepRecord& r) { return r.step_time_s && std::isfinite(*r.step_time_s); });
        const auto member = by_time ? &StepRecord::step_time_s : &StepRecord::tokens_per_s_per_gpu;
        std::vector<double> values;
        reserve_huge(values, steps.size() - 1);
        const auto centre = median_of_column(first, steps.end(), member, [](const StepRecord&) { return true; }, values);
        const auto steady = [&](const StepRecord& step) {
            const auto& v = step.*member;
            return !(centre && v && (*v > 2.0 * *centre || *v < 0.5 * *centre));
        };
        auto tflops = std::async(steps.size() >= k_parallel_summary_steps ? std::launch::async : std::launch::deferred, [&] {
            std::vector<double> column;
            reserve_huge(column, steps.size() - 1);
            return median_of_column(first, steps.end(), &StepRecord::tflops_per_gpu, steady, column);
        });
        used = static_cast<std::size_t>(std::count_if(first, steps.end(), steady));
        auto& out = metrics.steady;
        if (by_time && used == static_cast<std::size_t>(steps.end() - first)) {
            // No step dropped: the steady step times are the column `centre` came from, and
            // `values` still holds it (reordered, which neither a median nor the noise minds).
            out.step_time_s = centre;
        } else {
            out.step_time_s = median_of_column(first, steps.end(), &StepRecord::step_time_s, steady, values);
        }
        if (out.step_time_s) {
            out.noise = noise_in_place(values, *out.step_time_s);
        }
        out.tokens_per_s_per_gpu = median_of_column(first, steps.end(), &StepRecord::tokens_per_s_per_gpu, steady, values);
        if (!out.step_time_s && out.tokens_per_s_per_gpu) {
            out.noise = noise_in_place(values, *out.tokens_per_s_per_gpu);
        }
        out.tflops_per_gpu = tflops.get();
    }
    metrics.steady.steps_used = used;
    if (metrics.status == Status::ok && used < k_min_steady_steps) {
        metrics.status = Status::too_short;
        metrics.evidence.push_back({0, std::to_string(used) + " steady steps, fewer than " + std::to_string(k_min_steady_steps)});
    }
}

std::uintmax_t SplitPolicy::default_split_bytes() {
    return std::thread::hardware_concurrency() > 1 ? k_default_split_bytes : std::numeric_limits<std::uintmax_t>::max();
}

RunMetrics parse_logs(const std::vector<std::filesystem::path>& logs, const std::optional<std::string>& dialect,
                      const HangCheck& hang, const SplitPolicy& split) {
    const auto* forced = forced_spec(dialect);
    std::uintmax_t total_bytes = 0;
    for (const auto& path : logs) {
        refuse_binary(path);
        total_bytes += regular_file_size(path);
    }
    Parser parser(forced, hang);
    parser.expect_bytes(total_bytes);
    for (const auto& path : logs) {
        read_log(parser, path, forced, hang, split);
    }
    if (hang.after_s && hang.now) {
        // The newest modification among the files: a live job appends to its last log.
        std::optional<std::chrono::system_clock::time_point> written;
        for (const auto& path : logs) {
            std::error_code error;
            const auto time = std::filesystem::last_write_time(path, error);
            if (!error) {
                const auto system = std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(time));
                written = std::max(system, written.value_or(system));
            }
        }
        if (written) {
            parser.set_live_silence(std::chrono::duration<double>(*hang.now - *written).count());
        }
    }
    auto metrics = parser.finish();
    summarise(metrics);
    return metrics;
}

std::string_view status_name(Status status) {
    switch (status) {
    case Status::ok: return "ok";
    case Status::oom: return "oom";
    case Status::nccl_timeout: return "nccl-timeout";
    case Status::nccl_error: return "nccl-error";
    case Status::time_limit: return "time-limit";
    case Status::node_failure: return "node-failure";
    case Status::preempted: return "preempted";
    case Status::crash: return "crash";
    case Status::diverged: return "diverged";
    case Status::hang: return "hang";
    case Status::too_short: return "too-short";
    case Status::unknown: return "unknown";
    }
    return "crash";
}

}  // namespace attune::diagnose
