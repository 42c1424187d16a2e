// A training loop's progress and metrics: on a terminal, a bar that redraws itself on stderr
// with the running loss; in a log (stderr not a terminal), nothing while an epoch runs; and
// one result line per epoch on stdout ("epoch 2: 1.52 s, loss 0.412, dev accuracy
// 0.8412"), flushed, so that results and progress keep their order in a log. Used by the
// examples and the `tenon` command.
//
//   Progress progress;
//   for (int epoch = 1; epoch <= epochs; ++epoch) {
//       progress.start_epoch(epoch, batches.size());
//       for (auto [X, Y] : batches) { ...; progress.step(batch_loss); }
//       progress.end_epoch({{"loss", progress.loss()}, {"dev accuracy", acc}});
//   }
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

namespace tenon {

class Progress {
public:
    // `out`: the epochs' lines; `err`: the bar and warnings. The bar is drawn where `err` is a
    // terminal (isatty); elsewhere (a log) an epoch is its one line on `out`.
    explicit Progress(std::FILE* out = stdout, std::FILE* err = stderr);
    // As above, with the terminal test given (tests, or a log that wants the bar).
    Progress(std::FILE* out, std::FILE* err, bool terminal);

    // A new epoch of `steps` steps (batches); starts its clock and its running loss.
    void start_epoch(std::size_t epoch, std::size_t steps);
    // After each step: the bar (on a terminal). With the step's loss: added to the
    // epoch's (shown on the bar); a loss that is not finite is a warning line, once an epoch.
    void step();
    void step(double loss);
    // The epoch's line on `out`: "epoch N: S s" (the time of its steps: an evaluation after the
    // last step is not counted) and each metric as "name value" (4 decimals).
    void end_epoch(std::initializer_list<std::pair<const char*, double>> metrics = {});
    // A line on `err` that does not break the bar.
    void warn(const std::string& text);

    // The epoch so far: seconds from start_epoch to the last step, steps done, the sum of the
    // steps' losses.
    double seconds() const;
    std::size_t done() const noexcept { return done_; }
    double loss() const noexcept { return loss_; }
    bool terminal() const noexcept { return tty_; }

private:
    void clear_bar();
    void show(bool with_loss);
    std::FILE* out_;
    std::FILE* err_;
    bool tty_;
    bool bar_shown_ = false, warned_ = false;
    std::size_t epoch_ = 0, steps_ = 0, done_ = 0;
    double loss_ = 0.0;
    // The steady clock's time in nanoseconds (src/progress.cpp: <chrono> stays out of this header).
    std::int64_t t0_ = 0, t1_ = 0;
};

}  // namespace tenon
