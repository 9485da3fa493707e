// The readers and writers of text files (core/textio.h through systems/pointsets.c and
// rbf/vtk_io.c) and the messages of issue 33: NUL bytes and out-of-range numbers are errors that
// name the line, a failed write keeps the old file, a directory is an I/O error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "fmm.h"
#include "fmm_rbf.h"
#include "rbf/vtk_io.h"
#include "systems/pointsets.h"

namespace {

// A directory of the test's own, removed with its files at the end.
struct TempDir {
    std::string path;
    TempDir() {
        std::string t = ::testing::TempDir() + "fmm_readers_XXXXXX";
        char *p = mkdtemp(&t[0]);
        EXPECT_NE(p, nullptr);
        path = t;
    }
    ~TempDir() {
        DIR *d = opendir(path.c_str());
        if (d) {
            while (dirent *e = readdir(d))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    remove((path + "/" + e->d_name).c_str());
            closedir(d);
        }
        rmdir(path.c_str());
    }
    std::string file(const std::string &name, const std::string &content) const {
        std::string f = path + "/" + name;
        std::ofstream(f, std::ios::binary) << content;
        return f;
    }
    // the names of the files in the directory, sorted, each followed by a space
    std::string listing() const {
        std::vector<std::string> names;
        if (DIR *d = opendir(path.c_str())) {
            while (dirent *e = readdir(d))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names.push_back(e->d_name);
            closedir(d);
        }
        std::sort(names.begin(), names.end());
        std::string s;
        for (const auto &x : names) s += x + " ";
        return s;
    }
};

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// pts_read_xyzq's status, its message in *msg
int read_xyzq(const std::string &path, std::string *msg, long *n = nullptr, double **q = nullptr) {
    long m;
    double *xyz, *qq;
    char err[256];
    int rc = pts_read_xyzq(path.c_str(), &m, &xyz, &qq, err, sizeof err);
    *msg = err;
    if (n) *n = m;
    free(xyz);
    if (q)
        *q = qq;
    else
        free(qq);
    return rc;
}

// A file size limit of `bytes` for this process, with SIGXFSZ ignored so that a write past it
// fails with EFBIG (a real write error on a regular file, also for root); undone at scope end.
struct FileSizeLimit {
    rlimit old;
    void (*old_handler)(int);
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &old);
        old_handler = signal(SIGXFSZ, SIG_IGN);
        rlimit r = old;
        r.rlim_cur = bytes;
        EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &r), 0);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, old_handler);
    }
};

const char *const cube_vtk = "# vtk DataFile Version 3.0\n"
                             "one hexahedron\n"
                             "ASCII\n"
                             "DATASET UNSTRUCTURED_GRID\n"
                             "POINTS 8 double\n"
                             "0 0 0\n"
                             "1 0 0\n" // line 7
                             "1 1 0\n"
                             "0 1 0\n"
                             "0 0 1\n"
                             "1 0 1\n"
                             "1 1 1\n"
                             "0 1 1\n"
                             "CELLS 1 9\n"
                             "8 0 1 2 3 4 5 6 7\n"
                             "CELL_TYPES 1\n"
                             "12\n";

} // namespace

TEST(Readers, NulBytesAreErrorsNamingTheLine) {
    TempDir dir;
    std::string msg;
    // a line that starts with NUL was skipped, a file of NULs read as empty (/dev/zero hung)
    std::string start = dir.file("start.txt", std::string("0 0 0 1\n\0 1 0 0 -1\n", 19));
    EXPECT_EQ(read_xyzq(start, &msg), PTS_ERR_PARSE);
    EXPECT_NE(msg.find("start.txt:2: NUL byte"), std::string::npos) << msg;
    std::string end = dir.file("end.txt", std::string("0 0 0 1\n1 0 0 -1\0\n", 19));
    EXPECT_EQ(read_xyzq(end, &msg), PTS_ERR_PARSE);
    EXPECT_NE(msg.find("end.txt:2: NUL byte"), std::string::npos) << msg;
    std::string zeros = dir.file("zeros.bin", std::string(1 << 20, '\0'));
    EXPECT_EQ(read_xyzq(zeros, &msg), PTS_ERR_PARSE);
    EXPECT_NE(msg.find("zeros.bin:1: NUL byte"), std::string::npos) << msg;
}

TEST(Readers, NumbersOutOfRangeAreErrorsNamingLineAndColumn) {
    TempDir dir;
    std::string msg;
    // 1e-400 became 0 while 1e999 was an error; both are out of a double's range now
    std::string tiny = dir.file("tiny.txt", "0 0 0 1\n1 0 0 -1e-400\n");
    EXPECT_EQ(read_xyzq(tiny, &msg), PTS_ERR_NONFINITE);
    EXPECT_NE(msg.find("tiny.txt:2: column 4: '-1e-400' is out of range"), std::string::npos)
        << msg;
    std::string hex = dir.file("hex.txt", "0 0 0 1\n1 0x1p-1080 0 -1\n");
    EXPECT_EQ(read_xyzq(hex, &msg), PTS_ERR_NONFINITE);
    EXPECT_NE(msg.find("hex.txt:2: column 2"), std::string::npos) << msg;
    std::string huge = dir.file("huge.txt", "0 0 0 1\n1 0 1e999 -1\n");
    EXPECT_EQ(read_xyzq(huge, &msg), PTS_ERR_NONFINITE);
    EXPECT_NE(msg.find("huge.txt:2: column 3: '1e999' is out of range"), std::string::npos) << msg;
    // an exact zero with a large exponent, and a subnormal, are read as written
    std::string ok = dir.file("ok.txt", "0 0 0 0e-999\n1 0 0 4.9406564584124654e-324\n");
    long n = 0;
    double *q = nullptr;
    ASSERT_EQ(read_xyzq(ok, &msg, &n, &q), PTS_OK) << msg;
    ASSERT_EQ(n, 2);
    EXPECT_EQ(q[0], 0.0);
    EXPECT_EQ(q[1], 4.9406564584124654e-324);
    free(q);
}

TEST(Readers, RowsGiveTheLineOfEachRow) {
    TempDir dir;
    std::string f = dir.file("rows.txt", "# header\n1 2 3\n\n  # box 1 2 3\n4 5 6 # tail\n7 8 9\n"
                                         "# box 4 5 6\n");
    long n, *lines;
    int cols, nbox = -2;
    double *rows, *last, box[9];
    char err[256];
    ASSERT_EQ(pts_read_rows(f.c_str(), "a b c", 2, 3, &cols, &n, &rows, &last, &lines, box, &nbox,
                            err, sizeof err),
              PTS_OK)
        << err;
    ASSERT_EQ(nbox, 3); // the first '# box' line
    EXPECT_EQ(box[0], 1.0);
    EXPECT_EQ(box[2], 3.0);
    ASSERT_EQ(n, 3);
    EXPECT_EQ(cols, 3);
    EXPECT_EQ(lines[0], 2);
    EXPECT_EQ(lines[1], 5);
    EXPECT_EQ(lines[2], 6);
    EXPECT_EQ(rows[3], 5.0); // rows of 2 numbers, the third in last
    EXPECT_EQ(last[2], 9.0);
    free(rows), free(last), free(lines);
    std::string bad = dir.file("bad.txt", "1 2 3\n4 5\n");
    EXPECT_EQ(pts_read_rows(bad.c_str(), "a b c", 2, 3, &cols, &n, &rows, &last, &lines, nullptr,
                            nullptr, err, sizeof err),
              PTS_ERR_PARSE);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(rows, nullptr);
    EXPECT_EQ(lines, nullptr);
    EXPECT_STREQ(err, (bad + ":2: 2 numbers, expected 3 like the first row (a b c)").c_str());
}

TEST(Readers, BoxCommentLines) {
    double b[9];
    EXPECT_EQ(pts_box_comment("# box 3.1 3.2 3.3", b), 3);
    EXPECT_EQ(b[1], 3.2);
    EXPECT_EQ(pts_box_comment("  #box\t1 0 0 0 1 0 0 0 1 \n", b), 9);
    EXPECT_EQ(b[8], 1.0);
    EXPECT_EQ(pts_box_comment("# box 1 2", b), -1);      // neither 3 nor 9 numbers
    EXPECT_EQ(pts_box_comment("# box 1 2 3 nm", b), -1); // text after the numbers
    EXPECT_EQ(pts_box_comment("# box 1 2 3 4 5 6 7 8 9 10", b), -1);
    EXPECT_EQ(pts_box_comment("# box 1e999 1 1", b), -1); // out of range
    EXPECT_EQ(pts_box_comment("# box", b), -1);
    EXPECT_EQ(pts_box_comment("# boxes 1 2 3", b), 0); // another comment
    EXPECT_EQ(pts_box_comment("1 2 3 4", b), 0);
}

TEST(Readers, DirectoryIsAnIoErrorThatSaysSo) {
    TempDir dir;
    std::string msg;
    EXPECT_EQ(read_xyzq(dir.path, &msg), PTS_ERR_IO);
    EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
    fmm_vtk_mesh m;
    // said FMM_ERR_NOMEM ("rbf deform --mesh /tmp says out of memory")
    EXPECT_EQ(fmm_vtk_read(dir.path.c_str(), &m), FMM_ERR_IO);
    char err[256];
    EXPECT_EQ(fmm_vtk_read_msg(dir.path.c_str(), &m, err, sizeof err), FMM_ERR_IO);
    EXPECT_NE(strstr(err, "Is a directory"), nullptr) << err;
}

TEST(Readers, VtkNulBytesAndOutOfRangeNumbersAreErrorsNamingTheLine) {
    TempDir dir;
    fmm_vtk_mesh m;
    char err[256];
    std::string good = dir.file("good.vtk", cube_vtk);
    ASSERT_EQ(fmm_vtk_read_msg(good.c_str(), &m, err, sizeof err), FMM_OK) << err;
    EXPECT_EQ(m.npoints, 8);
    EXPECT_EQ(m.ncells, 1);
    fmm_vtk_free(&m);
    // a NUL byte was read as white space
    std::string nul = cube_vtk;
    nul[nul.find("1 0 0\n") + 1] = '\0';
    std::string path = dir.file("nul.vtk", nul);
    EXPECT_EQ(fmm_vtk_read(path.c_str(), &m), FMM_ERR_FORMAT);
    EXPECT_EQ(fmm_vtk_read_msg(path.c_str(), &m, err, sizeof err), FMM_ERR_FORMAT);
    EXPECT_NE(strstr(err, "nul.vtk:7: NUL byte"), nullptr) << err;
    // 1e-400 was read as 0
    std::string tiny = cube_vtk;
    tiny.replace(tiny.find("1 0 0\n"), 1, "1e-400");
    path = dir.file("tiny.vtk", tiny);
    EXPECT_EQ(fmm_vtk_read(path.c_str(), &m), FMM_ERR_FORMAT);
    EXPECT_EQ(fmm_vtk_read_msg(path.c_str(), &m, err, sizeof err), FMM_ERR_FORMAT);
    EXPECT_NE(strstr(err, "tiny.vtk:7: a POINTS coordinate: '1e-400' is out of range"), nullptr)
        << err;
    // a count far beyond the file is an error at its end, not a huge allocation
    path = dir.file("count.vtk", "# vtk DataFile Version 3.0\nx\nASCII\nDATASET UNSTRUCTURED_GRID\n"
                                 "POINTS 1000000000000 double\n0 0 0\n");
    EXPECT_EQ(fmm_vtk_read_msg(path.c_str(), &m, err, sizeof err), FMM_ERR_FORMAT);
    EXPECT_NE(strstr(err, "the file ends where a POINTS coordinate was expected"), nullptr) << err;
    EXPECT_EQ(m.npoints, 0);
    EXPECT_EQ(m.xyz, nullptr);
}

TEST(Writers, FailedWriteKeepsTheOldFileAndSaysWhy) {
    TempDir dir;
    const long n = 2000; // about 150 KB of "x y z q" lines
    std::vector<double> xyz(3 * n), q(n);
    ASSERT_EQ(pts_uniform(n, 5, xyz.data(), q.data()), PTS_OK);
    std::string pts = dir.file("points.txt", "old points\n");
    fmm_vtk_mesh m = {n, xyz.data(), 0, nullptr, nullptr, nullptr};
    std::string vtk = dir.file("mesh.vtk", "old mesh\n");
    int rc_pts, errno_pts, rc_vtk, errno_vtk;
    {
        FileSizeLimit limit(16384);
        rc_pts = pts_write_xyzq(pts.c_str(), n, xyz.data(), q.data());
        errno_pts = errno;
        rc_vtk = fmm_vtk_write(vtk.c_str(), &m, "big");
        errno_vtk = errno;
    }
    // pts_write_xyzq removed the old file, fmm_vtk_write truncated it
    EXPECT_EQ(rc_pts, PTS_ERR_IO);
    EXPECT_EQ(errno_pts, EFBIG) << strerror(errno_pts);
    EXPECT_EQ(slurp(pts), "old points\n");
    EXPECT_EQ(rc_vtk, FMM_ERR_IO);
    EXPECT_EQ(errno_vtk, EFBIG) << strerror(errno_vtk);
    EXPECT_EQ(slurp(vtk), "old mesh\n");
    EXPECT_EQ(dir.listing().find(".fmm-"), std::string::npos) << dir.listing();
    // without the limit both are replaced, and read back exactly
    ASSERT_EQ(pts_write_xyzq(pts.c_str(), n, xyz.data(), q.data()), PTS_OK);
    long n2;
    double *xyz2, *q2;
    char err[256];
    ASSERT_EQ(pts_read_xyzq(pts.c_str(), &n2, &xyz2, &q2, err, sizeof err), PTS_OK) << err;
    ASSERT_EQ(n2, n);
    EXPECT_EQ(memcmp(xyz2, xyz.data(), sizeof(double) * 3 * n), 0);
    EXPECT_EQ(memcmp(q2, q.data(), sizeof(double) * n), 0);
    free(xyz2), free(q2);
    ASSERT_EQ(fmm_vtk_write(vtk.c_str(), &m, "big"), FMM_OK);
    fmm_vtk_mesh r;
    ASSERT_EQ(fmm_vtk_read(vtk.c_str(), &r), FMM_OK);
    EXPECT_EQ(r.npoints, n);
    EXPECT_EQ(memcmp(r.xyz, xyz.data(), sizeof(double) * 3 * n), 0);
    fmm_vtk_free(&r);
    EXPECT_EQ(dir.listing(), "mesh.vtk points.txt ") << dir.listing();
}

TEST(Messages, NptsCoversAnExcludedPairBeyondThePoints) {
    // an exclusion index >= n said "number of particles must be at least 1"
    fmm_opts o;
    fmm_default_opts(&o);
    fmm_plan *plan = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &plan), FMM_OK);
    const double xyz[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, q[3] = {1, -1, 1};
    const int pairs[2] = {0, 5};
    ASSERT_EQ(fmm_set_exclusions(plan, 1, pairs), FMM_OK);
    ASSERT_EQ(fmm_setpts(plan, 3, xyz), FMM_OK);
    double phi[3];
    int rc = fmm_execute(plan, q, phi, nullptr, nullptr, nullptr);
    EXPECT_EQ(rc, FMM_ERR_NPTS);
    EXPECT_NE(strstr(fmm_strerror(rc), "fmm_set_exclusions"), nullptr) << fmm_strerror(rc);
    fmm_destroy(plan);
}
