// Progress (include/tenon/util/progress.hpp): the bar on a terminal and the epoch lines.
#include "tenon/util/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <unistd.h>

namespace tenon {

namespace {
std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

Progress::Progress(std::FILE* out, std::FILE* err) : Progress(out, err, isatty(fileno(err)) != 0) {}

Progress::Progress(std::FILE* out, std::FILE* err, bool terminal) : out_(out), err_(err), tty_(terminal) {}

void Progress::start_epoch(std::size_t epoch, std::size_t steps) {
    epoch_ = epoch;
    steps_ = steps;
    done_ = 0;
    loss_ = 0.0;
    warned_ = false;
    t0_ = t1_ = now_ns();
}

void Progress::step(double loss) {
    if (!std::isfinite(loss) && !warned_) {
        warned_ = true;
        warn("warning: epoch " + std::to_string(epoch_) + ", batch " + std::to_string(done_ + 1) +
             ": the loss is not finite (" + std::to_string(loss) + ")");
    }
    loss_ += loss;
    ++done_;
    t1_ = now_ns();
    show(true);
}

void Progress::step() {
    ++done_;
    t1_ = now_ns();
    show(false);
}

void Progress::show(bool with_loss) {
    const std::size_t total = steps_ ? steps_ : done_;
    if (tty_) {
        // Redrawn about 50 times an epoch, and at its end.
        if (done_ % std::max<std::size_t>(1, total / 50) != 0 && done_ != total) return;
        const std::size_t width = 30, k = std::min(width, width * done_ / total);
        std::fprintf(err_, "\repoch %zu [%s%s] %3zu%%", epoch_, std::string(k, '=').c_str(),
                     std::string(width - k, ' ').c_str(), std::min<std::size_t>(100, 100 * done_ / total));
        if (with_loss) std::fprintf(err_, "  loss %.4g", loss_);
        std::fflush(err_);
        bar_shown_ = true;
    }
    // In a log: nothing while the epoch runs; its one line comes from end_epoch.
}

void Progress::end_epoch(std::initializer_list<std::pair<const char*, double>> metrics) {
    const double secs = seconds();
    clear_bar();
    std::string line = "epoch " + std::to_string(epoch_) + ": ";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f s", secs);
    line += buf;
    for (const auto& [name, value] : metrics) {
        std::snprintf(buf, sizeof buf, "%.4f", value);
        line += std::string(", ") + name + " " + buf;
    }
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
}

void Progress::warn(const std::string& text) {
    clear_bar();
    std::fprintf(err_, "%s\n", text.c_str());
    std::fflush(err_);
}

double Progress::seconds() const { return static_cast<double>(t1_ - t0_) * 1e-9; }

void Progress::clear_bar() {
    if (!bar_shown_) return;
    std::fprintf(err_, "\r%70s\r", "");
    std::fflush(err_);
    bar_shown_ = false;
}

}  // namespace tenon
